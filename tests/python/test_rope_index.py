"""ropescope.rope_index against transformers: every fixture case of every family (transformers' own position_ids
and rope_deltas in tests/data/fixtures and tests/data/positions), batches of them left- and right-padded, and
random batches (images, videos, padding) against a line-by-line numpy transcription of transformers'
get_rope_index (transformers_rope.py)."""
import glob
import os
import unittest

import numpy as np

import ropescope
import safetensors_file
import transformers_rope

DATA = os.environ.get("ROPESCOPE_TEST_DATA", os.path.join(os.path.dirname(__file__), os.pardir, "data"))
FIXTURES = os.path.join(DATA, "fixtures")
INPUT_KEYS = ("image_grid_thw", "video_grid_thw", "mm_token_type_ids", "attention_mask", "second_per_grid_ts")


def fixture_cases():
    """(model folder, inputs, transformers' position_ids, rope_deltas) for every case. The Gemma fixtures' positions
    are [1, L] (one per token) and they have no rope_deltas: 0, as rope_index gives an unpadded row."""
    cases = []
    for folder in sorted(glob.glob(os.path.join(FIXTURES, "*-tiny"))):
        for inputs in sorted(glob.glob(os.path.join(folder, "inputs*.safetensors"))):
            expected = safetensors_file.read(inputs.replace("inputs", "expected"))
            positions = expected["position_ids"]
            deltas = expected.get("rope_deltas", np.zeros((positions.shape[-2], 1), np.int64))
            cases.append((folder, os.path.basename(inputs), safetensors_file.read(inputs), positions, deltas))
    for dump in sorted(glob.glob(os.path.join(DATA, "positions", "*", "dump*.safetensors"))):
        d = safetensors_file.read(dump)
        cases.append((os.path.dirname(dump), os.path.basename(dump), d, d["position_ids"], d["rope_deltas"]))
    return cases


def call(folder, inputs):
    return ropescope.rope_index(None, inputs["input_ids"], *(inputs.get(k) for k in INPUT_KEYS), config=folder)


class FixtureParity(unittest.TestCase):
    def test_every_family_and_case(self):
        cases = fixture_cases()
        families = {os.path.basename(c[0]) for c in cases}
        # The MoE members' fixtures (transformers' own positions for qwen3_vl_moe, qwen3_5_moe, glm4v_moe) too.
        mrope = {"qwen2vl-tiny", "qwen25vl-tiny", "qwen3vl-tiny", "qwen35-tiny", "glm4v-tiny", "paddleocr-vl-tiny", "qwen3vlmoe-tiny",
                 "qwen35moe-tiny", "glm4vmoe-tiny"}
        self.assertLessEqual(mrope, families)
        # The Gemma fixtures (one position per token), where the engine's suites have brought them.
        self.assertLessEqual(families - mrope, {"gemma3-tiny", "gemma4-tiny", "gemma4moe-tiny", "gemma4e-tiny"})
        self.assertGreaterEqual(len(cases), 30)
        for folder, name, inputs, positions, deltas in cases:
            with self.subTest(model=os.path.basename(folder), case=name):
                got, got_deltas = call(folder, inputs)
                self.assertEqual(got.dtype, np.int64)
                self.assertEqual(got.shape, positions.shape)
                np.testing.assert_array_equal(got, positions)
                np.testing.assert_array_equal(got_deltas, deltas.reshape(-1, 1))

    def test_moe_members_take_their_dense_siblings_rule(self):
        folder = os.path.join(FIXTURES, "qwen35-tiny")
        inputs = safetensors_file.read(os.path.join(folder, "inputs_video.safetensors"))
        dense = call(folder, inputs)
        for family in ("qwen3_5_moe", "qwen3.5-moe", "qwen3_5"):
            got = ropescope.rope_index(family, inputs["input_ids"], *(inputs.get(k) for k in INPUT_KEYS), image_token_id=253,
                                       video_token_id=254)
            np.testing.assert_array_equal(got[0], dense[0])
        glm = os.path.join(FIXTURES, "glm4v-tiny")
        g = safetensors_file.read(os.path.join(glm, "inputs_video.safetensors"))
        np.testing.assert_array_equal(ropescope.rope_index("glm4v_moe", g["input_ids"], *(g.get(k) for k in INPUT_KEYS))[0],
                                      call(glm, g)[0])

    def test_padded_batches_of_the_fixture_cases(self):
        # transformers writes the attended tokens' positions over ones and takes rope_deltas against the padded
        # length: each row is its own case's result, shifted into place.
        by_model = {}
        for folder, name, inputs, positions, deltas in fixture_cases():
            if "dump" not in name:
                by_model.setdefault(folder, []).append((inputs, positions, deltas))
        for folder, cases in by_model.items():
            for side in ("left", "right"):
                with self.subTest(model=os.path.basename(folder), padding=side):
                    L = max(c[0]["input_ids"].shape[1] for c in cases)
                    B = len(cases)
                    batch = {"input_ids": np.zeros((B, L), np.int64), "attention_mask": np.zeros((B, L), np.int64),
                             "mm_token_type_ids": np.zeros((B, L), np.int64)}
                    rows = cases[0][1].shape[0] if cases[0][1].ndim == 3 else 1  # Gemma's [1, L]: one row
                    want = np.ones((rows, B, L), np.int64)
                    want_deltas = np.zeros((B, 1), np.int64)
                    grids = {"image_grid_thw": [], "video_grid_thw": []}
                    for b, (inputs, positions, deltas) in enumerate(cases):
                        n = inputs["input_ids"].shape[1]
                        at = slice(L - n, L) if side == "left" else slice(0, n)
                        batch["input_ids"][b, at] = inputs["input_ids"][0]
                        batch["attention_mask"][b, at] = 1
                        if "mm_token_type_ids" in inputs:
                            batch["mm_token_type_ids"][b, at] = inputs["mm_token_type_ids"][0]
                        want[:, b, at] = positions.reshape(rows, -1, n)[:, 0]
                        want_deltas[b] = deltas.reshape(-1)[0] - (L - n)
                        for k in grids:
                            if k in inputs:
                                grids[k].append(inputs[k])
                    for k, v in grids.items():
                        batch[k] = np.concatenate(v) if v else None
                    got, got_deltas = call(folder, batch)
                    np.testing.assert_array_equal(got, want if rows > 1 else want[0])
                    np.testing.assert_array_equal(got_deltas, want_deltas)


class RandomBatchesAgainstTransformers(unittest.TestCase):
    """Random prompts (text, images, videos, padding on either side) for the families found by token ids."""
    VS, VE, IMG, VID = 250, 251, 253, 254

    def make_batch(self, rng, form):
        B = int(rng.integers(1, 5))
        rows, images, videos, seconds = [], [], [], []
        for _ in range(B):
            ids = list(rng.integers(0, 240, size=int(rng.integers(1, 8))))
            for _ in range(int(rng.integers(0, 4))):
                h, w = 2 * int(rng.integers(1, 5)), 2 * int(rng.integers(1, 5))
                if rng.random() < 0.5:
                    images.append([1, h, w])
                    ids += [self.VS] + [self.IMG] * (h * w // 4) + [self.VE]
                else:
                    t = int(rng.integers(1, 5))
                    videos.append([t, h, w])
                    seconds.append(float(rng.choice([0.25, 0.5, 1.0, 1.5, 2.0])))
                    if form == "qwen3":  # a timestamp and its own vision_start before each frame
                        for _ in range(t):
                            ids += list(rng.integers(0, 240, size=2)) + [self.VS] + [self.VID] * (h * w // 4) + [self.VE]
                    else:
                        ids += [self.VS] + [self.VID] * (t * h * w // 4) + [self.VE]
                ids += list(rng.integers(0, 240, size=int(rng.integers(0, 6))))
            rows.append(ids)
        L = max(map(len, rows))
        input_ids = np.zeros((B, L), np.int64)
        mask = np.zeros((B, L), np.int64)
        for b, r in enumerate(rows):
            at = slice(L - len(r), L) if rng.random() < 0.5 else slice(0, len(r))
            input_ids[b, at] = r
            mask[b, at] = 1
        grid = lambda g: np.array(g, np.int64).reshape(-1, 3) if g else None
        # Each sample's videos share one second_per_grid_t (RopeScope's rule takes one per sample).
        return input_ids, mask, grid(images), grid(videos), (np.array(seconds) if seconds else None), rows

    def test_random_batches(self):
        rng = np.random.default_rng(58)
        for family, form in (("qwen2-vl", "qwen2"), ("qwen2.5-vl", "qwen2.5"), ("qwen3-vl", "qwen3"), ("qwen3.5", "qwen3")):
            for trial in range(60):
                input_ids, mask, images, videos, seconds, _ = self.make_batch(rng, form)
                if form == "qwen2.5" and videos is not None:
                    # one value per sample: all videos of the batch share one
                    seconds = np.full(len(videos), seconds[0])
                with self.subTest(family=family, trial=trial):
                    want = transformers_rope.get_rope_index(form, input_ids, images, videos, mask, seconds if form == "qwen2.5" else None,
                                                            image_token_id=self.IMG,
                                                            video_token_id=self.VID, vision_start_token_id=self.VS)
                    got = ropescope.rope_index(family, input_ids, images, videos, attention_mask=mask, second_per_grid_ts=seconds,
                                               image_token_id=self.IMG, video_token_id=self.VID)
                    np.testing.assert_array_equal(got[0], want[0])
                    np.testing.assert_array_equal(got[1], want[1])

    def test_qwen25_video_time_follows_seconds(self):
        # tau = floor(frame * second_per_grid * tokens_per_second): 4 frames at 0.5 s and 2 tokens/s step t by 1,
        # at 2 s by 4; Qwen2-VL steps by 1 whatever the seconds.
        ids = np.array([[1, self.VS] + [self.VID] * 4 + [self.VE, 2]])
        grid = np.array([[4, 2, 2]])
        for family, seconds, step in (("qwen2.5-vl", 0.5, 1), ("qwen2.5-vl", 2.0, 4), ("qwen2-vl", 2.0, 1)):
            pos, _ = ropescope.rope_index(family, ids, video_grid_thw=grid, second_per_grid_ts=[seconds], image_token_id=self.IMG,
                                          video_token_id=self.VID)
            np.testing.assert_array_equal(pos[0, 0, 2:6], 2 + step * np.arange(4))


if __name__ == "__main__":
    unittest.main()

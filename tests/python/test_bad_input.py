"""Bad input to rope_index and check_positions: a Python exception (ropescope.InvalidInput) naming what is wrong,
never a crash of the interpreter; and a fuzz-style run of random shapes, dtypes and values."""
import unittest

import numpy as np

import ropescope

VS, VE, IMG = 250, 251, 253


def prompt():
    """text 2, <|vision_start|>, a 4x6 patch image (6 tokens), <|vision_end|>, text 2."""
    return np.array([[1, 2, VS] + [IMG] * 6 + [VE, 3, 4]]), np.array([[1, 4, 6]])


class BadInput(unittest.TestCase):
    def assertRefused(self, message, f, *args, **kwargs):
        with self.assertRaises(ropescope.InvalidInput) as caught:
            f(*args, **kwargs)
        self.assertIn(message, str(caught.exception))
        return caught.exception

    def rope(self, *args, **kwargs):
        kwargs.setdefault("image_token_id", IMG)
        return ropescope.rope_index(*args, **kwargs)

    def test_the_prompt_itself_is_placed(self):
        ids, grid = prompt()
        pos, deltas = self.rope("qwen2-vl", ids, grid)
        np.testing.assert_array_equal(pos[:, 0, 3:9], [[3] * 6, [3, 3, 3, 4, 4, 4], [3, 4, 5, 3, 4, 5]])
        self.assertEqual(deltas[0, 0], 9 - 12)  # max position 8 + 1 - L

    def test_unknown_family(self):
        ids, grid = prompt()
        e = self.assertRefused("expected one of qwen2-vl, qwen2.5-vl", self.rope, "qwen9-vl", ids, grid)
        self.assertEqual(e.parameter, "family")
        self.assertRefused("family: expected a name", self.rope, 3, ids, grid)

    def test_wrong_dtypes(self):
        ids, grid = prompt()
        self.assertRefused("input_ids: expected whole numbers", self.rope, "qwen2-vl", ids.astype(np.float32), grid)
        self.assertRefused("image_grid_thw: expected whole numbers", self.rope, "qwen2-vl", ids, grid.astype(np.float64))
        self.assertRefused("attention_mask: expected whole numbers", self.rope, "qwen2-vl", ids, grid, attention_mask=np.ones(ids.shape) * 0.5)
        self.assertRefused("input_ids: expected whole numbers", self.rope, "qwen2-vl", np.array([["a", "b"]]), grid)
        self.assertRefused("second_per_grid_ts: expected real numbers", self.rope, "qwen2.5-vl", ids, grid, second_per_grid_ts=["x"])
        # int32 ids and a bool mask are what tokenizers and collators give: accepted
        pos, _ = self.rope("qwen2-vl", ids.astype(np.int32), grid.astype(np.int32), attention_mask=np.ones(ids.shape, bool))
        self.assertEqual(pos[2, 0, 8], 5)

    def test_mismatched_shapes(self):
        ids, grid = prompt()
        self.assertRefused("'input_ids' must be [B, L]", self.rope, "qwen2-vl", ids[0], grid)
        self.assertRefused("'attention_mask' must be [B, L]", self.rope, "qwen2-vl", ids, grid, attention_mask=np.ones((1, 5), np.int64))
        self.assertRefused("'image_grid_thw' must be [N, 3]", self.rope, "qwen2-vl", ids, grid[:, :2])
        self.assertRefused("'mm_token_type_ids' must be [B, L]", self.rope, "glm-v", ids, grid, mm_token_type_ids=np.zeros((2, 13), np.int64))
        self.assertRefused("input_ids: not an array", self.rope, "qwen2-vl", [[1, 2], [3]], grid)
        self.assertRefused("at most 4 dimensions", self.rope, "qwen2-vl", ids.reshape(1, 1, 1, 1, 12), grid)

    def test_grids_that_do_not_fit_the_ids(self):
        ids, grid = prompt()
        self.assertRefused("image 0 has more tokens than its grid (1,4,4) places (4)", self.rope, "qwen2-vl", ids, np.array([[1, 4, 4]]))
        self.assertRefused("image 0 needs 9 tokens for grid (1,6,6)", self.rope, "qwen2-vl", ids, np.array([[1, 6, 6]]))
        self.assertRefused("needs more tokens than input_ids has left", self.rope, "qwen2-vl", ids, np.array([[1, 40, 60]]))
        self.assertRefused("divisible by 2", self.rope, "qwen2-vl", ids, np.array([[1, 3, 6]]))
        self.assertRefused("more image token runs than image_grid_thw has rows", self.rope, "qwen2-vl", ids, None)
        self.assertRefused("image_grid_thw has 2 rows", self.rope, "qwen2-vl", ids, np.array([[1, 4, 6], [1, 4, 6]]))
        self.assertRefused("is not a grid", self.rope, "qwen2-vl", ids, np.array([[0, 4, 6]]))
        self.assertRefused("one number per video_grid_thw row", self.rope, "qwen2.5-vl", ids, grid, second_per_grid_ts=[1.0])

    def test_values_out_of_range(self):
        ids, grid = prompt()
        bad = ids.copy()
        bad[0, 0] = -5
        self.assertRefused("'input_ids' holds -5", self.rope, "qwen2-vl", bad, grid)
        bad[0, 0] = 300
        self.assertRefused("outside the vocabulary (0..255)", self.rope, "qwen2-vl", bad, grid, vocab_size=256)
        self.assertRefused("values other than 0 and 1", self.rope, "qwen2-vl", ids, grid, attention_mask=np.full(ids.shape, 2))
        self.assertRefused("holds values above 2^63", self.rope, "qwen2-vl", ids.astype(np.uint64) + np.uint64(2**63), grid)
        self.assertRefused("no 'mm_token_type_ids'", self.rope, "glm-v", ids, grid)
        self.assertRefused("(0 text, 1 image, 2 video)", self.rope, "glm-v", ids, grid, mm_token_type_ids=np.full(ids.shape, 7))
        e = self.assertRefused("spatial_merge_size", self.rope, "qwen2-vl", ids, grid, spatial_merge_size=0)
        self.assertEqual(e.parameter, "spatial_merge_size")
        self.assertRefused("second_per_grid_ts' holds a value outside", self.rope, "qwen2.5-vl", ids, grid, video_grid_thw=np.array([[1, 2, 2]]),
                           second_per_grid_ts=[float("nan")])

    def test_bad_config(self):
        ids, grid = prompt()
        self.assertRefused("config: ", self.rope, "qwen2-vl", ids, grid, config="/nonexistent/config.json")
        self.assertRefused("config: expected a dict", self.rope, "qwen2-vl", ids, grid, config=42)

    def test_check_positions_refuses_as_the_cli_does(self):
        ids, grid = prompt()
        pos, _ = self.rope("qwen2-vl", ids, grid)
        self.assertRefused("'position_ids' must be [3, B, L] or [4, B, L]", ropescope.check_positions, pos[:2], ids, "qwen2-vl",
                           grid, image_token_id=IMG)
        self.assertRefused("'rope_deltas' must hold one whole number per sample", ropescope.check_positions, pos, ids, "qwen2-vl", grid,
                           rope_deltas=[1, 2], image_token_id=IMG)
        self.assertRefused("position_ids: expected whole numbers", ropescope.check_positions, pos.astype(float), ids, "qwen2-vl", grid,
                           image_token_id=IMG)


class Fuzz(unittest.TestCase):
    """Random shapes, dtypes and values into every argument: each call returns arrays of the right shape or raises
    InvalidInput; anything else (another exception, a crash of the process) fails."""

    def random_array(self, rng, ndim_range=(0, 5), high=300):
        ndim = int(rng.integers(*ndim_range))
        shape = tuple(int(rng.integers(0, 6)) for _ in range(ndim))
        kind = rng.integers(0, 6)
        if kind == 0:
            return rng.random(shape)  # floats
        if kind == 1:
            return rng.integers(-3, 3, size=shape).astype(bool)
        if kind == 2:
            return rng.integers(-2, high, size=shape).astype(np.int32)
        if kind == 3:
            return rng.choice([VS, VE, IMG, 254, 0, 1, 2], size=shape).astype(np.int64)
        if kind == 4:
            return rng.integers(0, 12, size=shape).astype(np.int64)
        return None

    def test_random_arguments(self):
        rng = np.random.default_rng(2026)
        families = ropescope.families() + ["qwen3_vl_moe", "nope"]
        for trial in range(2000):
            family = families[int(rng.integers(0, len(families)))]
            args = [self.random_array(rng, (1, 4)) if rng.random() < 0.9 else self.random_array(rng)]
            args += [self.random_array(rng) if rng.random() < 0.5 else None for _ in range(5)]
            with self.subTest(trial=trial, family=family):
                try:
                    pos, deltas = ropescope.rope_index(family, *args, image_token_id=IMG, video_token_id=254)
                except ropescope.InvalidInput as e:
                    self.assertTrue(str(e))
                    continue
                B, L = np.asarray(args[0]).shape
                # XD-RoPE's p, w, h, t; Gemma's one position per token, [B, L] as transformers'
                shape = (B, L) if family in ("gemma3", "gemma4") else (4 if family == "xd-rope" else 3, B, L)
                self.assertEqual((pos.shape, deltas.shape), (shape, (B, 1)))

    def test_corrupted_batches(self):
        # Well-formed batches (text and images, typed for GLM-V), then one thing changed at random: either still
        # placed (and then check_positions agrees with rope_index) or refused with InvalidInput.
        rng = np.random.default_rng(58)
        accepted = refused = 0
        for trial in range(1500):
            family = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "glm-v")[trial % 4]
            B = int(rng.integers(1, 4))
            rows, types, grids = [], [], []
            for _ in range(B):
                ids = list(rng.integers(0, 240, size=int(rng.integers(1, 5))))
                for _ in range(int(rng.integers(0, 3))):
                    h, w = 2 * int(rng.integers(1, 4)), 2 * int(rng.integers(1, 4))
                    grids.append([1, h, w])
                    ids += [VS] + [IMG] * (h * w // 4) + [VE] + list(rng.integers(0, 240, size=int(rng.integers(0, 3))))
                rows.append(ids)
            L = max(map(len, rows))
            ids = np.zeros((B, L), np.int64)
            mask = np.zeros((B, L), np.int64)
            for b, r in enumerate(rows):
                ids[b, L - len(r):] = r
                mask[b, L - len(r):] = 1
            types = (ids == IMG).astype(np.int64)
            grid = np.array(grids, np.int64).reshape(-1, 3) if grids else None
            what = int(rng.integers(0, 6))
            if what == 0 and grid is not None:
                grid[rng.integers(0, len(grid)), rng.integers(0, 3)] += int(rng.integers(-2, 3))
            elif what == 1:
                mask[rng.integers(0, B), rng.integers(0, L)] = int(rng.integers(-1, 3))
            elif what == 2:
                types[rng.integers(0, B), rng.integers(0, L)] = int(rng.integers(-1, 4))
            elif what == 3:
                ids[rng.integers(0, B), rng.integers(0, L)] = rng.choice([IMG, VS, -1, 7])
            elif what == 4 and grid is not None:
                grid = grid[:-1] if rng.random() < 0.5 else np.concatenate([grid, [[1, 2, 2]]])
            with self.subTest(trial=trial, family=family, what=what):
                try:
                    pos, deltas = ropescope.rope_index(family, ids, grid, None, types, mask, image_token_id=IMG)
                except ropescope.InvalidInput as e:
                    self.assertTrue(str(e))
                    refused += 1
                    continue
                accepted += 1
                self.assertEqual((pos.shape, deltas.shape), ((3, B, L), (B, 1)))
                report = ropescope.check_positions(pos, ids, family, grid, None, types, mask, rope_deltas=deltas, image_token_id=IMG)
                self.assertTrue(report.ok, str(report))
        self.assertGreater(accepted, 300)
        self.assertGreater(refused, 100)


if __name__ == "__main__":
    unittest.main()

"""ropescope.rope_index and check_positions for the two position rules the engine does not run: ERNIE-4.5-VL's
(ernie-vl) and HunyuanOCR's / HunyuanVL's XD-RoPE (xd-rope). The expected positions are the golden data the schemes'
own tests use, recomputed outside RopeScope from the upstream code paths (tests/data/ernie/make_reference.py:
transformers' Ernie4_5_VLMoeModel.get_rope_index with huggingface/transformers#45400's fix;
tests/data/xdrope/make_reference.py: vLLM's get_xdrope_input_positions over real token ids)."""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import ropescope
import safetensors_file

DATA = os.environ.get("ROPESCOPE_TEST_DATA", os.path.join(os.path.dirname(__file__), os.pardir, "data"))
# HunyuanOCR's ids, as tests/data/xdrope/make_reference.py writes them.
IM_START, IM_END, IMAGE, VIDEO_START, VIDEO_END = 120118, 120119, 120120, 120122, 120123


def reference(name):
    with open(os.path.join(DATA, name, "reference.json"), encoding="utf-8") as f:
        return json.load(f)["cases"]


def ernie_inputs(layout):
    """mm_token_type_ids and the processor's grids (patches, before the 2x2 merge; a video's t in frames, two to a
    temporal patch) of a layout such as "text:3,image:2x3,video:3x2x2"."""
    types, images, videos = [], [], []
    for item in layout.split(","):
        kind, size = item.split(":")
        if kind == "text":
            types += [0] * int(size)
        elif kind == "image":
            h, w = map(int, size.split("x"))
            types += [1] * (h * w)
            images.append((1, 2 * h, 2 * w))
        else:
            t, h, w = map(int, size.split("x"))
            types += [2] * (t * h * w)
            videos.append((2 * t, 2 * h, 2 * w))
    grid = lambda rows: np.array(rows, np.int64).reshape(-1, 3) if rows else None
    types = np.array([types], np.int64)
    # Token ids do not matter to ERNIE's rule (it reads the types), so any ids stand in.
    return np.where(types == 0, 100, 100295 + types), types, grid(images), grid(videos)


def xd_grids(layout):
    """image_grid_thw and video_grid_thw (patches) of an xd-rope reference layout: consecutive video:1xHxW frames
    are one video's temporal patches."""
    images, videos, last = [], [], None
    for item in layout.split(","):
        kind, size = item.split(":")
        if kind == "image":
            h, w = map(int, size.split("x"))
            images.append([1, 2 * h, 2 * w])
        elif kind == "video":
            _, h, w = map(int, size.split("x"))
            if last == "video":
                videos[-1][0] += 1
            else:
                videos.append([1, 2 * h, 2 * w])
        if kind != "text":
            last = kind
    grid = lambda rows: np.array(rows, np.int64) if rows else None
    return grid(images), grid(videos)


class ErnieVl(unittest.TestCase):
    def test_every_reference_case(self):
        cases = reference("ernie")
        self.assertGreaterEqual(len(cases), 6)
        for name, case in cases.items():
            with self.subTest(case=name):
                ids, types, images, videos = ernie_inputs(case["layout"])
                positions, deltas = ropescope.rope_index("ernie-vl", ids, images, videos, mm_token_type_ids=types)
                np.testing.assert_array_equal(positions[:, 0], np.array(case["positions"]))
                self.assertEqual(deltas.tolist(), [[case["rope_deltas"]]])
                # config.json's model_type names the same rule.
                same = ropescope.rope_index(None, ids, images, videos, mm_token_type_ids=types, config={"model_type": "ernie4_5_vl_moe"})
                np.testing.assert_array_equal(same[0], positions)

    def test_left_padded_batch(self):
        cases = reference("ernie")
        a, b = ernie_inputs(cases["long_video"]["layout"]), ernie_inputs(cases["two_images"]["layout"])
        L = max(a[0].shape[1], b[0].shape[1])
        ids, types, mask = (np.zeros((2, L), np.int64) for _ in range(3))
        for row, (i, t, _, _) in enumerate((a, b)):
            n = i.shape[1]
            ids[row, L - n:], types[row, L - n:], mask[row, L - n:] = i[0], t[0], 1
        positions, deltas = ropescope.rope_index("ernie-vl", ids, b[2], a[3], mm_token_type_ids=types, attention_mask=mask)
        for row, name in enumerate(("long_video", "two_images")):
            expected = np.array(cases[name]["positions"])
            n = expected.shape[1]
            np.testing.assert_array_equal(positions[:, row, L - n:], expected)
            np.testing.assert_array_equal(positions[:, row, :L - n], 1)  # padding keeps transformers' ones
            self.assertEqual(deltas[row, 0], expected.max() + 1 - L)

    def test_check_names_transformers_5_3s_constant_t(self):
        # transformers 5.3's get_vision_position_ids gave every temporal patch t = start (#45381); the rule steps it.
        case = reference("ernie")["video"]
        ids, types, images, videos = ernie_inputs(case["layout"])
        good = np.array(case["positions"])[:, None, :]
        report = ropescope.check_positions(good, ids, "ernie-vl", images, videos, mm_token_type_ids=types,
                                           rope_deltas=np.array([[case["rope_deltas"]]]))
        self.assertTrue(report.ok, str(report))
        bad = good.copy()
        video = types[0] == 2
        bad[0, 0, video] = bad[0, 0, video].min()
        s = ropescope.check_positions(bad, ids, "ernie-vl", images, videos, mm_token_type_ids=types)[0]
        self.assertEqual((s.kind, s.axis, s.segment), ("temporal", "t", "video 0"))
        self.assertEqual(s.detail, "t is constant within video 0; the rule steps it by 1 a frame")

    def test_bad_input_is_named(self):
        ids, types, images, videos = ernie_inputs("text:2,video:1x2x2,text:2")
        with self.assertRaises(ropescope.InvalidInput) as e:  # ERNIE finds its vision tokens by the types alone
            ropescope.rope_index("ernie-vl", ids, images, videos)
        self.assertIn("mm_token_type_ids", str(e.exception))
        with self.assertRaises(ropescope.InvalidInput) as e:  # one frame is no temporal patch (two frames are)
            ropescope.rope_index("ernie-vl", ids, images, np.array([[1, 4, 4]]), mm_token_type_ids=types)
        self.assertIn("fewer than one temporal patch", str(e.exception))


    @unittest.skipUnless(os.environ.get("ROPESCOPE_BINARY"), "ROPESCOPE_BINARY not set (ctest sets it)")
    def test_the_cli_checks_an_ernie_dump(self):
        # `check-positions --family ernie-vl` on a dump of two rows (the rule's, and transformers 5.3's constant t)
        # names the second as Python does, and a model folder's model_type picks the same rule.
        case = reference("ernie")["long_video"]
        ids, types, images, videos = ernie_inputs(case["layout"])
        good = np.array(case["positions"])[:, None, :]
        bad = good.copy()
        bad[0, 0, types[0] == 2] = bad[0, 0, types[0] == 2].min()
        pos = np.concatenate([good, bad], axis=1)
        batch = {"input_ids": np.repeat(ids, 2, axis=0), "mm_token_type_ids": np.repeat(types, 2, axis=0),
                 "video_grid_thw": np.repeat(videos, 2, axis=0), "position_ids": pos}
        report = ropescope.check_positions(pos, batch["input_ids"], "ernie-vl", None, batch["video_grid_thw"],
                                           mm_token_type_ids=batch["mm_token_type_ids"])
        self.assertEqual([s.kind for s in report], ["none", "temporal"])
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "batch.safetensors")
            safetensors_file.write(dump, batch)
            model = os.path.join(tmp, "ernie")
            os.mkdir(model)
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump({"model_type": "ernie4_5_vl_moe"}, f)
            for given in (["--family", "ernie-vl"], ["--model", model]):
                run = subprocess.run([os.environ["ROPESCOPE_BINARY"], "check-positions", dump] + given, capture_output=True,
                                     text=True, timeout=120)
                self.assertEqual(run.returncode, 1, run.stderr)
                listed = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("batch.safetensors row ")]
                self.assertEqual(listed, ["batch.safetensors " + str(s) for s in report.differing])


class XdRope(unittest.TestCase):
    def test_every_reference_case(self):
        cases = reference("xdrope")
        self.assertGreaterEqual(len(cases), 5)
        for name, case in cases.items():
            with self.subTest(case=name):
                ids = np.array([case["input_ids"]], np.int64)
                images, videos = xd_grids(case["layout"])
                positions, deltas = ropescope.rope_index("xd-rope", ids, images, videos)
                self.assertEqual(positions.shape, (4, 1, ids.shape[1]))  # p, w, h, t
                np.testing.assert_array_equal(positions[:, 0], np.array(case["positions"]))
                self.assertEqual(deltas.tolist(), [[0]])  # p is the index: nothing is compressed

    def test_a_configs_own_ids(self):
        # A config.json with other span ids (HunyuanVL's may differ from HunyuanOCR's) moves the rule with it.
        case = reference("xdrope")["image_and_video"]
        ids = np.array([case["input_ids"]], np.int64)
        images, videos = xd_grids(case["layout"])
        remap = {IM_START: 7, IM_END: 8, IMAGE: 9, VIDEO_START: 5, VIDEO_END: 6}
        mine = np.vectorize(lambda t: remap.get(t, t))(ids)
        config = {"model_type": "hunyuan_vl", "image_token_id": 9, "image_start_token_id": 7, "video_start_token_id": 5,
                  "video_end_token_id": 6}
        positions, _ = ropescope.rope_index(None, mine, images, videos, config=config)
        np.testing.assert_array_equal(positions[:, 0], np.array(case["positions"]))

    def test_check_names_the_differences(self):
        case = reference("xdrope")["video"]
        ids = np.array([case["input_ids"]], np.int64)
        images, videos = xd_grids(case["layout"])
        good = np.array(case["positions"])[:, None, :]
        self.assertTrue(ropescope.check_positions(good, ids, "xd-rope", images, videos).ok)
        L = ids.shape[1]
        s = ropescope.check_positions(np.broadcast_to(np.arange(L), (4, 1, L)), ids, "xd-rope", images, videos)[0]
        self.assertEqual((s.kind, s.axis, s.segment), ("1-d", "w", "video 0 frame 0"))
        self.assertEqual(s.detail, "p = w = h = t on all %d tokens" % L)
        # Every frame at the first frame's t: a temporal mistake, on the t row (the fourth).
        bad = good.copy()
        frames = (ids[0] == IMAGE) & (good[1, 0] != good[0, 0])
        bad[3, 0, frames] = 0
        s = ropescope.check_positions(bad, ids, "xd-rope", images, videos)[0]
        self.assertEqual((s.kind, s.axis, s.segment), ("temporal", "t", "video 0 frame 1"))
        self.assertEqual(s.detail, "t is constant within video 0; the rule steps it by 1 a frame")

    def test_bad_input_is_named(self):
        case = reference("xdrope")["image"]
        ids = np.array([case["input_ids"]], np.int64)
        images, _ = xd_grids(case["layout"])
        with self.assertRaises(ropescope.InvalidInput) as e:  # its four rows, not M-RoPE's three
            ropescope.check_positions(np.zeros((3,) + ids.shape, np.int64), ids, "xd-rope", images)
        self.assertIn("[4, B, L] (p, w, h, t)", str(e.exception))
        short = np.delete(ids, np.where(ids[0] == IMAGE)[0][0], axis=1)  # one image token fewer than h (w + 1) + 2
        with self.assertRaises(ropescope.InvalidInput) as e:
            ropescope.rope_index("xd-rope", short, images)
        self.assertIn("input_ids", str(e.exception))

    def test_families_name_both(self):
        self.assertIn("ernie-vl", ropescope.families())
        self.assertIn("xd-rope", ropescope.families())


if __name__ == "__main__":
    unittest.main()

"""Gemma 3 and Gemma 4 (one sequential position per token, images and videos alike): rope_index and check_positions
against transformers' own position_ids for every fixture case (tests/data/positions/gemma, made from
../shared/fixtures by make.py there), padded batches against an independent computation of generate's rule
(attention_mask.cumsum(-1) - 1, padding 1), packed rows whose positions restart at 0, a wrong position named by its
token, bad input refused in one line; gemma4_patch_positions against the image processor's image_position_ids; and
`ropescope check-positions` on the same batches."""
import glob
import os
import subprocess
import tempfile
import unittest

import numpy as np

import ropescope
import safetensors_file

DATA = os.environ.get("ROPESCOPE_TEST_DATA", os.path.join(os.path.dirname(__file__), os.pardir, "data"))
GEMMA = os.path.join(DATA, "positions", "gemma")
MODELS = ("gemma3-tiny", "gemma4-tiny")


def cases(model):
    """(name, tensors) of every case of a model, in name order."""
    return [(os.path.basename(p), safetensors_file.read(p)) for p in sorted(glob.glob(os.path.join(GEMMA, model, "case*.safetensors")))]


def folder(model):
    return os.path.join(GEMMA, model)


def cumsum_rule(mask):
    """transformers' generate: position_ids = attention_mask.long().cumsum(-1) - 1, then 1 where the mask is 0."""
    p = np.cumsum(mask.astype(np.int64), axis=-1) - 1
    p[mask == 0] = 1
    return p


def padded(model, side):
    """Every case of a model in one batch, padded on `side` with id 0: ids, mask and each row's own positions."""
    all_cases = cases(model)
    L = max(c["input_ids"].shape[1] for _, c in all_cases)
    B = len(all_cases)
    ids, mask, own = np.zeros((B, L), np.int64), np.zeros((B, L), np.int64), np.ones((B, L), np.int64)
    for b, (_, c) in enumerate(all_cases):
        n = c["input_ids"].shape[1]
        at = slice(L - n, L) if side == "left" else slice(0, n)
        ids[b, at], mask[b, at], own[b, at] = c["input_ids"][0], 1, c["position_ids"][0]
    return ids, mask, own


def packed(model, names):
    """The named cases packed into one row, with transformers' positions of each (restarting at 0)."""
    by_name = dict(cases(model))
    ids = np.concatenate([by_name[n]["input_ids"] for n in names], axis=1)
    positions = np.concatenate([by_name[n]["position_ids"] for n in names], axis=1)
    starts = np.cumsum([0] + [by_name[n]["input_ids"].shape[1] for n in names])[:-1]
    return ids, positions, starts


class FixtureParity(unittest.TestCase):
    def test_every_case_matches_transformers(self):
        seen = 0
        for model in MODELS:
            for name, c in cases(model):
                with self.subTest(model=model, case=name):
                    L = c["input_ids"].shape[1]
                    np.testing.assert_array_equal(c["position_ids"], np.arange(L).reshape(1, L))  # the fixture's own
                    pos, deltas = ropescope.rope_index(None, c["input_ids"], attention_mask=c["attention_mask"], config=folder(model))
                    self.assertEqual((pos.dtype, pos.shape), (np.int64, (1, L)))  # [B, L], as transformers'
                    np.testing.assert_array_equal(pos, c["position_ids"])
                    np.testing.assert_array_equal(deltas, [[0]])
                    report = ropescope.check_positions(c["position_ids"], c["input_ids"], None, attention_mask=c["attention_mask"],
                                                       config=folder(model))
                    self.assertTrue(report.ok, str(report))
                    self.assertEqual((report[0].tokens, report[0].sequences), (L, 1))
                    # [1, B, L] is read as [B, L]
                    self.assertTrue(ropescope.check_positions(c["position_ids"][None], c["input_ids"], None, config=folder(model)).ok)
                    seen += 1
        self.assertEqual(seen, 9)  # gemma3: main, long, multi, text; gemma4: and video

    def test_family_names_and_model_types(self):
        self.assertIn("gemma3", ropescope.families())
        self.assertIn("gemma4", ropescope.families())
        ids = np.array([[2, 255999] + [258880] * 4 + [258882, 7]])
        for family in ("gemma4", "gemma4_text", "gemma3", "gemma3_text"):
            pos, deltas = ropescope.rope_index(family, ids)
            np.testing.assert_array_equal(pos, [np.arange(8)])
            np.testing.assert_array_equal(deltas, [[0]])


class Padding(unittest.TestCase):
    def test_padded_batches_follow_generates_cumsum_rule(self):
        for model in MODELS:
            for side in ("left", "right"):
                with self.subTest(model=model, side=side):
                    ids, mask, own = padded(model, side)
                    pos, deltas = ropescope.rope_index(None, ids, attention_mask=mask, config=folder(model))
                    np.testing.assert_array_equal(pos, cumsum_rule(mask))
                    np.testing.assert_array_equal(pos, own)  # each row its own case's positions, shifted into place
                    np.testing.assert_array_equal(deltas[:, 0], mask.sum(1) - mask.shape[1])
                    self.assertTrue(ropescope.check_positions(pos, ids, None, attention_mask=mask, config=folder(model)).ok)

    def test_positions_counting_the_padding_are_an_offset(self):
        # A pipeline that gave a left-padded batch arange(L) (counting the padding): every left-padded row is off by its
        # padding; the longest row (no padding) matches.
        ids, mask, _ = padded("gemma4-tiny", "left")
        L = ids.shape[1]
        report = ropescope.check_positions(np.broadcast_to(np.arange(L), ids.shape), ids, "gemma4", attention_mask=mask,
                                           config=folder("gemma4-tiny"))
        pads = L - mask.sum(1)
        self.assertEqual([s.kind for s in report], ["none" if p == 0 else "offset" for p in pads])
        for s, pad in zip(report, pads):
            if pad:
                self.assertEqual((s.first_token, s.got, s.expected, s.axis), (pad, pad, 0, "position"))
                self.assertEqual(s.detail, "every position is %d above the rule's" % pad)
        # Right-padded with arange: the attended tokens are 0..n-1 whatever the padding holds.
        ids, mask, _ = padded("gemma4-tiny", "right")
        self.assertTrue(ropescope.check_positions(np.broadcast_to(np.arange(L), ids.shape), ids, "gemma4", attention_mask=mask).ok)

    def test_without_a_mask_every_token_counts(self):
        ids, _, _ = padded("gemma3-tiny", "left")
        pos, deltas = ropescope.rope_index("gemma3", ids)
        np.testing.assert_array_equal(pos, np.broadcast_to(np.arange(ids.shape[1]), ids.shape))
        np.testing.assert_array_equal(deltas, np.zeros((ids.shape[0], 1)))


class Packing(unittest.TestCase):
    def test_packed_rows_restart_at_zero(self):
        names = ["case.safetensors", "case_multi.safetensors", "case_text.safetensors", "case_video.safetensors"]
        ids, positions, starts = packed("gemma4-tiny", names)
        report = ropescope.check_positions(positions, ids, None, config=folder("gemma4-tiny"))
        self.assertTrue(report.ok, str(report))
        self.assertEqual(report[0].sequences, 4)
        # Two packed rows, right-padded, with padding positions the collator left at 0.
        L = ids.shape[1] + 5
        two_ids, mask, two_pos = np.zeros((2, L), np.int64), np.zeros((2, L), np.int64), np.zeros((2, L), np.int64)
        two_ids[:, :ids.shape[1]], mask[:, :ids.shape[1]], two_pos[:, :ids.shape[1]] = ids[0], 1, positions[0]
        report = ropescope.check_positions(two_pos, two_ids, "gemma4", attention_mask=mask, config=folder("gemma4-tiny"))
        self.assertEqual([(s.kind, s.sequences) for s in report], [("none", 4), ("none", 4)])

    def test_a_wrong_position_in_a_packed_sequence_is_named(self):
        names = ["case.safetensors", "case_multi.safetensors", "case_text.safetensors"]
        ids, positions, starts = packed("gemma4-tiny", names)
        wrong = positions.copy()
        image = int(starts[1] + np.flatnonzero(ids[0, starts[1]:] == 250)[0])  # the second sequence's first image token
        wrong[0, image] += 2
        s = ropescope.check_positions(wrong, ids, "gemma4", config=folder("gemma4-tiny"))[0]
        self.assertEqual((s.kind, s.first_token, s.segment, s.got, s.expected, s.differing), ("other", image, "image 1",
                                                                                          wrong[0, image], positions[0, image], 1))
        self.assertEqual(s.detail, "1 of %d tokens differ (3 packed sequences)" % ids.shape[1])
        self.assertEqual(str(s), "row 0: other (1 of %d tokens differ (3 packed sequences)); first at token %d (image 1): got %d, "
                                 "expected %d" % (ids.shape[1], image, wrong[0, image], positions[0, image]))
        # A lone 0 amid a count is a wrong position, not a restart: the token is named, nothing after it differs.
        zeroed = positions.copy()
        zeroed[0, image] = 0
        s = ropescope.check_positions(zeroed, ids, "gemma4", config=folder("gemma4-tiny"))[0]
        self.assertEqual((s.first_token, s.segment, s.got, s.differing, s.sequences), (image, "image 1", 0, 1, 3))
        # A sequence that restarts at 1 is not a restart: from there on every position is one above the rule's count.
        late = positions.copy()
        late[0, starts[2]:] += 1
        s = ropescope.check_positions(late, ids, "gemma4", config=folder("gemma4-tiny"))[0]
        self.assertEqual((s.kind, s.first_token, s.got, s.expected, s.sequences), ("other", starts[2], 1, starts[2] - starts[1], 2))

    def test_the_collator_checks_packed_batches(self):
        # A flattening collator's batch: one packed row, no attention_mask, position_ids that restart.
        ids, positions, _ = packed("gemma3-tiny", ["case.safetensors", "case_multi.safetensors"])
        collator = ropescope.CheckedCollator(lambda features: features[0], "gemma3", config=folder("gemma3-tiny"))
        good = {"input_ids": ids, "position_ids": positions}
        self.assertIs(collator([good]), good)
        bad = {"input_ids": ids, "position_ids": np.arange(ids.shape[1]).reshape(1, -1) + 1}
        with self.assertRaises(ropescope.PositionMismatch) as caught:
            collator([bad])
        self.assertEqual(caught.exception.report[0].kind, "offset")

    def test_constant_zeros_are_not_packing(self):
        ids = cases("gemma3-tiny")[0][1]["input_ids"]
        s = ropescope.check_positions(np.zeros_like(ids), ids, "gemma3", config=folder("gemma3-tiny"))[0]
        self.assertEqual((s.kind, s.first_token, s.got, s.expected), ("other", 1, 0, 1))
        self.assertIn("every position is 0", s.detail)


class WrongPositions(unittest.TestCase):
    def test_the_differing_token_is_named(self):
        by_name = dict(cases("gemma4-tiny"))
        c = by_name["case_video.safetensors"]
        ids, pos = c["input_ids"], c["position_ids"]
        frames = np.flatnonzero(ids[0] == 254)
        second_frame = int(frames[6])  # 6 soft tokens a frame
        for at, segment in [(second_frame, "video frame 1"), (second_frame - 1, "boi of video frame 1"),
                            (int(frames[5]) + 1, "eoi of video frame 0"), (3, "text")]:
            wrong = pos.copy()
            wrong[0, at] = 99
            with self.subTest(segment=segment):
                s = ropescope.check_positions(wrong, ids, None, config=folder("gemma4-tiny"))[0]
                self.assertEqual((s.kind, s.first_token, s.segment, s.got, s.expected), ("other", at, segment, 99, at))
        c = dict(cases("gemma3-tiny"))["case_multi.safetensors"]
        wrong = c["position_ids"].copy()
        second = int(np.flatnonzero(c["input_ids"][0] == 250)[9])  # the second image's first token (9 a image)
        wrong[0, second:] -= 1
        s = ropescope.check_positions(wrong, c["input_ids"], None, config=folder("gemma3-tiny"))[0]
        self.assertEqual((s.kind, s.first_token, s.segment), ("other", second, "image 1"))

    def test_rope_deltas_are_checked(self):
        c = cases("gemma3-tiny")[0][1]
        s = ropescope.check_positions(c["position_ids"], c["input_ids"], "gemma3", rope_deltas=[[1]])[0]
        self.assertEqual((s.kind, s.got, s.expected), ("rope-deltas", 1, 0))


class BadInput(unittest.TestCase):
    def assertRefused(self, parameter, words, f, *args, **kwargs):
        with self.assertRaises(ropescope.InvalidInput) as caught:
            f(*args, **kwargs)
        self.assertEqual(caught.exception.parameter, parameter)
        self.assertIn(words, str(caught.exception))
        self.assertNotIn("\n", str(caught.exception))

    def test_bad_batches_are_refused_in_one_line(self):
        c = cases("gemma4-tiny")[0][1]
        ids, pos, model = c["input_ids"], c["position_ids"], folder("gemma4-tiny")
        hub = ids.copy()
        hub[0, 10] = 258880  # the Hub's image token id in the tiny model's vocabulary of 256
        self.assertRefused("input_ids", "'input_ids' holds 258880, outside the vocabulary (0..255)", ropescope.rope_index, None, hub,
                           config=model)
        self.assertRefused("input_ids", "outside the vocabulary", ropescope.check_positions, pos, hub, None, config=model)
        self.assertRefused("input_ids", "'input_ids' holds 298, outside the vocabulary (0..255)", ropescope.rope_index, "gemma3",
                           ids + 50, vocab_size=256)
        self.assertRefused("image_grid_thw", "gemma4 gives every token one sequential position and reads no grids",
                           ropescope.rope_index, "gemma4", ids, [[1, 2, 2]])
        self.assertRefused("position_ids", "'position_ids' must be [B, L] (one position per token)", ropescope.check_positions,
                           np.broadcast_to(pos, (3,) + pos.shape), ids, "gemma4")
        self.assertRefused("attention_mask", "'attention_mask' must be [B, L]", ropescope.rope_index, "gemma4", ids,
                           attention_mask=np.ones((2, 2), np.int64))


class PatchPositions(unittest.TestCase):
    # The fixture images' sizes in patches (README of ../shared/fixtures: patch 4, images of 24x36, 36x24 and 12x48,
    # 36x48 px; the video's frames 24x36), each padded to max_soft_tokens 70 x 3 x 3 = 630 patches.
    SIZES = {"case.safetensors": [(6, 9)], "case_multi.safetensors": [(9, 6), (3, 12)], "case_long.safetensors": [(9, 12)]}

    def test_the_image_processors_positions(self):
        by_name = dict(cases("gemma4-tiny"))
        for name, sizes in self.SIZES.items():
            with self.subTest(case=name):
                got = np.stack([ropescope.gemma4_patch_positions(h, w, 630) for h, w in sizes])
                self.assertEqual((got.shape, got.dtype), ((len(sizes), 630, 2), np.int64))
                np.testing.assert_array_equal(got, by_name[name]["image_position_ids"])
                np.testing.assert_array_equal(by_name[name]["num_soft_tokens_per_image"], [h * w // 9 for h, w in sizes])
        video = by_name["case_video.safetensors"]["video_position_ids"]
        for frame in range(video.shape[1]):
            np.testing.assert_array_equal(ropescope.gemma4_patch_positions(6, 9, 630), video[0, frame])
        # Row-major, x fastest, then the padding.
        np.testing.assert_array_equal(ropescope.gemma4_patch_positions(2, 3, 7), [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1], [-1, -1]])

    def test_bad_sizes_name_the_argument(self):
        refused = BadInput.assertRefused
        refused(self, "height_patches", "must be at least 1", ropescope.gemma4_patch_positions, 0, 3, 9)
        refused(self, "width_patches", "expected a whole number", ropescope.gemma4_patch_positions, 3, 2.5, 9)
        refused(self, "max_patches", "4 x 3 patches do not fit in 9", ropescope.gemma4_patch_positions, 4, 3, 9)
        refused(self, "max_patches", "must be from 1 to 1048576", ropescope.gemma4_patch_positions, 1, 1, 1 << 21)


@unittest.skipUnless(os.environ.get("ROPESCOPE_BINARY"), "ROPESCOPE_BINARY not set (ctest sets it)")
class CommandLine(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([os.environ["ROPESCOPE_BINARY"], "check-positions", *args], capture_output=True, text=True, timeout=120)

    def test_the_fixture_dumps_match(self):
        for model in MODELS:
            run = self.run_cli(folder(model), "--model", folder(model))
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("summary: %d checked, 0 differ" % len(cases(model)), run.stdout)

    def test_the_cli_names_the_same_differences(self):
        # Three rows: right (the longest case, unpadded), offset by its left padding, one wrong image token.
        ids, mask, own = padded("gemma4-tiny", "left")
        rows = [1, 0, 2]  # case_long, case, case_multi
        ids, mask, own = ids[rows], mask[rows], own[rows]
        L = ids.shape[1]
        own[1] = np.arange(L)
        image = int(np.flatnonzero(ids[2] == 250)[0])
        own[2, image] = 0
        report = ropescope.check_positions(own, ids, "gemma4", attention_mask=mask, config=folder("gemma4-tiny"))
        self.assertEqual([s.kind for s in report.differing], ["offset", "other"])
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "batch.safetensors")
            safetensors_file.write(dump, {"input_ids": ids, "attention_mask": mask, "position_ids": own})
            run = self.run_cli(dump, "--model", folder("gemma4-tiny"), "--report", os.path.join(tmp, "report"))
            self.assertEqual(run.returncode, 1, run.stderr)
            listed = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("batch.safetensors row ")]
            self.assertEqual(listed, ["batch.safetensors " + str(s) for s in report.differing])
            self.assertIn("summary: 3 checked, 2 differ", run.stdout)
            self.assertTrue(os.path.getsize(os.path.join(tmp, "report", "sample_0_batch_row1.png")) > 1000)
            # Bad input: the Hub's image id in the tiny vocabulary, one line on stderr and exit 2.
            ids[0, -1] = 258880
            safetensors_file.write(dump, {"input_ids": ids, "attention_mask": mask, "position_ids": own})
            run = self.run_cli(dump, "--model", folder("gemma4-tiny"))
            self.assertEqual(run.returncode, 2, run.stdout)
            self.assertEqual(run.stderr.count("\n"), 1, run.stderr)
            self.assertIn("'input_ids' holds 258880, outside the vocabulary (0..255)", run.stderr)
            run = self.run_cli(dump, "--family", "gemma4")  # the family without a config checks no vocabulary
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertIn("summary: 3 checked, 2 differ", run.stdout)


if __name__ == "__main__":
    unittest.main()

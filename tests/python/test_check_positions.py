"""ropescope.check_positions: transformers' own positions pass for every fixture case; copies made wrong in each way
check-positions names are named the same way (1-D, a padding offset, temporal ids, rope_deltas, the text row of a
[4, B, L] table); the CLI, given the same batch as a dump, lists the same differences; and the collator wrapper
raises or logs on a wrong batch."""
import contextlib
import io
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np

import ropescope
import safetensors_file
from test_rope_index import FIXTURES, INPUT_KEYS, fixture_cases

VS, VE, VID = 250, 251, 254


def check(folder, inputs, positions, deltas=None):
    return ropescope.check_positions(positions, inputs["input_ids"], None, *(inputs.get(k) for k in INPUT_KEYS), rope_deltas=deltas,
                                     config=folder)


def fixture(name, suffix=""):
    folder = os.path.join(FIXTURES, name)
    inputs = safetensors_file.read(os.path.join(folder, "inputs%s.safetensors" % suffix))
    expected = safetensors_file.read(os.path.join(folder, "expected%s.safetensors" % suffix))
    return folder, inputs, expected["position_ids"], expected["rope_deltas"]


class CheckPositions(unittest.TestCase):
    def test_transformers_positions_pass(self):
        for folder, name, inputs, positions, deltas in fixture_cases():
            with self.subTest(model=os.path.basename(folder), case=name):
                report = check(folder, inputs, positions, deltas)
                self.assertTrue(report.ok, str(report))
                self.assertEqual([s.kind for s in report], ["none"])
                self.assertEqual(report[0].tokens, int(inputs["attention_mask"].sum()))

    def test_one_d_positions(self):
        folder, inputs, positions, _ = fixture("qwen2vl-tiny", "_multi")
        L = positions.shape[2]
        s = check(folder, inputs, np.broadcast_to(np.arange(L), (3, 1, L)))[0]
        self.assertEqual((s.kind, s.segment, s.axis), ("1-d", "image 0", "t"))
        self.assertEqual(s.detail, "t = h = w on all %d tokens" % L)

    def test_padding_counted_into_positions(self):
        # Row 1 left-padded by 3 with positions that count the padding: every position 3 above the rule's.
        folder, inputs, positions, _ = fixture("qwen25vl-tiny")
        L, pad = inputs["input_ids"].shape[1], 3
        ids = np.zeros((2, L + pad), np.int64)
        mask = np.zeros((2, L + pad), np.int64)
        pos = np.ones((3, 2, L + pad), np.int64)
        ids[0, :L], mask[0, :L], pos[:, 0, :L] = inputs["input_ids"][0], 1, positions[:, 0]
        ids[1, pad:], mask[1, pad:], pos[:, 1, pad:] = inputs["input_ids"][0], 1, positions[:, 0] + pad
        report = ropescope.check_positions(pos, ids, "qwen2.5-vl", np.array([[1, 4, 6]] * 2), attention_mask=mask, config=folder)
        self.assertEqual([s.kind for s in report], ["none", "offset"])
        self.assertEqual(report[1].first_token, pad)
        self.assertEqual(report[1].detail, "every position is 3 above the rule's")
        self.assertFalse(report.ok)
        self.assertEqual(report.differing, [report[1]])

    def test_temporal_ids(self):
        # Qwen2.5-VL, a 2-frame video on a 4x4 patch grid at 0.5 s per grid: the rule steps t by 1; a pipeline that
        # truncated second_per_grid_ts to 0 keeps it constant (transformers #48669).
        ids = np.array([[10, 11, VS] + [VID] * 8 + [VE, 12, 13]])
        grid = np.array([[2, 4, 4]])
        pos, deltas = ropescope.rope_index("qwen2.5-vl", ids, video_grid_thw=grid, second_per_grid_ts=[0.5], image_token_id=253,
                                           video_token_id=VID)
        np.testing.assert_array_equal(pos[0, 0], [0, 1, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 6, 7])
        wrong = pos.copy()
        wrong[0, 0, 7:11] = 3
        s = ropescope.check_positions(wrong, ids, "qwen2.5-vl", video_grid_thw=grid, second_per_grid_ts=[0.5], image_token_id=253,
                                      video_token_id=VID)[0]
        self.assertEqual((s.kind, s.segment, s.axis, s.first_token), ("temporal", "video 0", "t", 7))
        self.assertEqual(s.detail, "t is constant within video 0; the rule steps it by 1 a frame")

    def test_rope_deltas_and_four_row_tables(self):
        folder, inputs, positions, deltas = fixture("qwen35-tiny", "_video")
        s = check(folder, inputs, positions, deltas + 1)[0]
        self.assertEqual((s.kind, s.got, s.expected), ("rope-deltas", deltas[0, 0] + 1, deltas[0, 0]))
        L = positions.shape[2]
        four = np.concatenate([np.arange(L).reshape(1, 1, L), positions])
        self.assertTrue(check(folder, inputs, four).ok)
        four[0, 0, 5] = 9
        s = check(folder, inputs, four)[0]
        self.assertEqual((s.kind, s.axis, s.first_token), ("other", "text", 5))

    @unittest.skipUnless(os.environ.get("ROPESCOPE_BINARY"), "ROPESCOPE_BINARY not set (ctest sets it)")
    def test_the_cli_names_the_same_differences(self):
        # One batch, three rows (right, 1-D, offset by 2), as a dump for `ropescope check-positions`: the CLI lists the
        # same rows with the same words as the report's samples.
        folder, inputs, positions, _ = fixture("qwen2vl-tiny", "_multi")
        L = positions.shape[2]
        ids = np.repeat(inputs["input_ids"], 3, axis=0)
        pos = np.repeat(positions, 3, axis=1)
        pos[:, 1] = np.arange(L)
        pos[:, 2] += 2
        grids = np.concatenate([inputs["image_grid_thw"]] * 3)
        report = ropescope.check_positions(pos, ids, "qwen2-vl", grids, config=folder)
        self.assertEqual([s.kind for s in report], ["none", "1-d", "offset"])
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "batch.safetensors")
            safetensors_file.write(dump, {"input_ids": ids, "attention_mask": np.ones_like(ids), "image_grid_thw": grids,
                                          "position_ids": pos})
            run = subprocess.run([os.environ["ROPESCOPE_BINARY"], "check-positions", dump, "--model", folder], capture_output=True,
                                 text=True, timeout=120)
        self.assertEqual(run.returncode, 1, run.stderr)
        listed = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("batch.safetensors row ")]
        self.assertEqual(listed, ["batch.safetensors " + str(s) for s in report.differing])
        self.assertIn("summary: 3 checked, 2 differ", run.stdout)


class Collator(unittest.TestCase):
    def batch(self, wrong):
        folder, inputs, positions, _ = fixture("qwen2vl-tiny")
        pos = positions.copy()
        if wrong:
            pos[:, 0, 4:] += 1
        return folder, dict(inputs, position_ids=pos)

    def test_raises_or_logs_on_a_wrong_batch(self):
        folder, good = self.batch(False)
        _, bad = self.batch(True)
        collator = ropescope.CheckedCollator(lambda features: features[0], "qwen2-vl", config=folder)
        self.assertIs(collator([good]), good)
        with self.assertRaises(ropescope.PositionMismatch) as caught:
            collator([bad])
        self.assertEqual(caught.exception.report[0].kind, "other")
        self.assertEqual(caught.exception.report[0].first_token, 4)
        logging = ropescope.CheckedCollator(lambda features: features[0], "qwen2-vl", config=folder, on_mismatch="log")
        with self.assertLogs("ropescope", level="WARNING") as logs:
            self.assertIs(logging([bad]), bad)
        self.assertIn("row 0: other", logs.output[0])
        self.assertEqual(logging.mismatches, 1)
        # A batch without position_ids (the model computes them) passes through unless required.
        plain = {k: v for k, v in good.items() if k != "position_ids"}
        self.assertIs(collator([plain]), plain)
        with self.assertRaises(KeyError):
            ropescope.CheckedCollator(lambda f: f[0], "qwen2-vl", config=folder, require=True)([plain])

    def test_the_docs_example_runs_as_written(self):
        # docs/PYTHON.md's collator example, run as it stands; what it prints is what its comments say.
        docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "docs", "PYTHON.md")
        with open(docs, encoding="utf-8") as f:
            example = [b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "buggy_collate" in b][0]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example, "docs/PYTHON.md", "exec"), {})
        said = [line[2:] for line in example.splitlines() if line.startswith("# ")]
        printed = out.getvalue().splitlines()
        self.assertEqual(printed[0], "(3, 2, 11)")
        self.assertEqual(printed[1:], said)


if __name__ == "__main__":
    unittest.main()

"""ropescope.forward and ropescope.attend: the ropescope binary in its own process, its outputs read back as numpy.
forward on the Qwen2-VL fixture gives transformers' own positions, logits and greedy tokens; attend on the bundled
model gives its summary, answer and maps; the binary's one-line errors come back as exceptions."""
import importlib.util
import os
import subprocess
import tempfile
import unittest

import numpy as np

import ropescope
import safetensors_file
from test_rope_index import FIXTURES


@unittest.skipUnless(os.environ.get("ROPESCOPE_BINARY"), "ROPESCOPE_BINARY not set (ctest sets it)")
class Runner(unittest.TestCase):
    def test_forward_matches_transformers(self):
        folder = os.path.join(FIXTURES, "qwen2vl-tiny")
        inputs = safetensors_file.read(os.path.join(folder, "inputs.safetensors"))
        want = safetensors_file.read(os.path.join(folder, "expected.safetensors"))
        out = ropescope.forward(folder, inputs["input_ids"], inputs["pixel_values"], inputs["image_grid_thw"])
        np.testing.assert_array_equal(out["position_ids"], want["position_ids"])
        np.testing.assert_array_equal(out["rope_deltas"], want["rope_deltas"])
        np.testing.assert_array_equal(out["generated_ids"], want["generated_ids"])
        np.testing.assert_allclose(out["logits"], want["logits"], atol=1e-4)
        self.assertEqual(out["metadata"]["layout"], "text:4,image:2x3,text:5")
        # the positions rope_index gives are the ones the model ran with
        np.testing.assert_array_equal(ropescope.rope_index(None, inputs["input_ids"], inputs["image_grid_thw"], config=folder)[0],
                                      out["position_ids"])
        circle = ropescope.forward(folder, inputs["input_ids"], inputs["pixel_values"], inputs["image_grid_thw"], generate=0,
                                   scheme="circle", alpha=0.3)
        self.assertEqual(circle["metadata"]["scheme"], "circle")
        self.assertEqual(circle["position_ids"].dtype, np.float32)  # Circle-RoPE's positions are not whole
        self.assertNotIn("generated_ids", circle)

    def test_forward_errors_are_exceptions(self):
        folder = os.path.join(FIXTURES, "qwen2vl-tiny")
        inputs = safetensors_file.read(os.path.join(folder, "inputs.safetensors"))
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.forward(folder, inputs["input_ids"], inputs["pixel_values"], inputs["image_grid_thw"], scheme="circle", alpha=3)
        self.assertIn("alpha", str(caught.exception))
        with self.assertRaises((ropescope.InvalidInput, ropescope.RopeScopeError)):
            ropescope.forward("/nonexistent/model", [1, 2, 3])
        # a path with a newline keeps its reason: the binary escapes it (\x0a) instead of cutting the message there
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.forward("/nonexistent/dir\nx", [1, 2, 3])
        self.assertEqual(str(caught.exception), "ropescope forward: /nonexistent/dir\\x0ax: no such model folder")
        # keywords the binary's forward does not take are refused before it runs
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.forward(folder, inputs["input_ids"], **{"output=/tmp/x.safetensors": True})
        self.assertEqual(caught.exception.parameter, "output=/tmp/x.safetensors")

    def test_attend_on_the_bundled_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = ropescope.attend(output=tmp, max_new_tokens=1, per_token=True, scheme="circle", alpha=0.3)
            self.assertTrue(os.path.isfile(r["files"]["heatmap.png"]))
        self.assertEqual(r["summary"]["scheme"], "circle")
        self.assertEqual(r["answer"], r["summary"]["answer"])
        self.assertIn("tokens", r)
        self.assertTrue(r["attention"])
        self.assertTrue(all(isinstance(v, np.ndarray) for v in r["attention"].values()))
        # positions.csv: one row per token of the prompt's layout
        tokens = 0
        for segment in r["summary"]["layout"].split(","):
            kind, size = segment.split(":")
            tokens += int(np.prod([int(v) for v in size.split("x")]))
        self.assertTrue(r["positions"])
        self.assertTrue(all(len(column) == tokens for column in r["positions"].values()))


if __name__ == "__main__":
    unittest.main()


EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "schemes")


@unittest.skipUnless(os.environ.get("ROPESCOPE_BINARY"), "ROPESCOPE_BINARY not set (ctest sets it)")
class SchemeFiles(unittest.TestCase):
    """positions, ptd and prior under a Python scheme file, which the binary runs in its own bounded worker."""

    def test_the_files_positions(self):
        # Against the file's own positions(), called here on the same layout: what the binary's worker ran.
        path = os.path.join(EXAMPLES, "sphere.py")
        layout = "text:3,image:3x4,text:2,video:2x2x2,text:1"
        table = ropescope.positions(layout, path, radius=4.5, frame_step=2)
        spec = importlib.util.spec_from_file_location("sphere", path)
        sphere = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sphere)

        class Seg:
            def __init__(self, kind, start, length, frames=1, rows=0, cols=0):
                self.kind, self.start, self.length, self.frames, self.rows, self.cols = kind, start, length, frames, rows, cols

        class Layout:
            tokens = 3 + 12 + 2 + 8 + 1
            segments = [Seg("text", 0, 3), Seg("image", 3, 12, 1, 3, 4), Seg("text", 15, 2), Seg("video", 17, 8, 2, 2, 2),
                        Seg("text", 25, 1)]

        np.testing.assert_allclose(table.positions, sphere.positions(Layout, 4.5, 2.0).T, rtol=0, atol=1e-9)
        self.assertEqual(table.components, ["t", "h", "w"])
        self.assertEqual(table.scheme, "sphere.py")
        self.assertEqual(table.modality.tolist(), [0] * 3 + [1] * 12 + [0] * 2 + [2] * 8 + [0])

    def test_ptd_and_prior_equal_the_builtin_they_export(self):
        # A built-in exported as a Python file gives the built-in's PTD and prior: the file runs in the binary, its
        # positions and allocation come back, and the library's metrics run on them.
        layout = "text:4,image:4x4,text:3,image:2x3,text:2"
        with tempfile.TemporaryDirectory() as tmp:
            for scheme, extra in (("circle", ["--alpha", "0.3"]), ("mrope-i", [])):
                path = os.path.join(tmp, scheme.replace("-", "_") + ".py")
                subprocess.run([os.environ["ROPESCOPE_BINARY"], "export-scheme", "--scheme", scheme, "--output", path] + extra,
                               check=True, capture_output=True)
                params = {"alpha": 0.3} if scheme == "circle" else {}
                builtin = ropescope.positions(layout, scheme, **params)
                exported = ropescope.positions(layout, path)
                np.testing.assert_allclose(exported.positions, builtin.positions, atol=1e-9)
                a, b = ropescope.ptd(layout, path), builtin.ptd()
                self.assertAlmostEqual(a["mean"], b["mean"], places=9)
                np.testing.assert_allclose(a["per_block"], b["per_block"], atol=1e-9)
                for token in (0, 22, 30):
                    np.testing.assert_allclose(ropescope.prior(layout, token, path), builtin.prior(token), atol=1e-9)

    def test_a_files_errors_are_exceptions(self):
        path = os.path.join(EXAMPLES, "sphere.py")
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.positions("text:2,image:2x2", path, radius=1000)  # outside its PARAMETERS' range
        self.assertIn("radius", str(caught.exception))
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.positions("text:2,image:2x2", path, nope=1)
        self.assertIn("nope", str(caught.exception))
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.py")
            with open(bad, "w") as f:
                f.write("COMPONENTS = ['t', 'h', 'w']\ndef positions(layout):\n    raise RuntimeError('no positions here')\n")
            with self.assertRaises((ropescope.InvalidInput, ropescope.RopeScopeError)) as caught:
                ropescope.positions("text:2,image:2x2", bad)
            self.assertIn("no positions here", str(caught.exception))

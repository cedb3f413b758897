"""ropescope.forward and ropescope.attend: the ropescope binary in its own process, its outputs read back as numpy.
forward on the Qwen2-VL fixture gives transformers' own positions, logits and greedy tokens; attend on the bundled
model gives its summary, answer and maps; the binary's one-line errors come back as exceptions."""
import os
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

"""ropescope.schemes / parameters / positions / ptd / prior: the registry and the parameter table as the CLI reads
them, positions checked by hand, PTD against a numpy computation of Circle-RoPE's eq. 1, errors naming the parameter."""
import unittest

import numpy as np

import ropescope


class Schemes(unittest.TestCase):
    def test_registry_and_parameter_table(self):
        names = [s["name"] for s in ropescope.schemes()]
        for name in ("hard", "mrope", "circle", "mrope-i", "glm-v", "ernie-vl", "xd-rope"):
            self.assertIn(name, names)
        self.assertEqual({s["name"]: s["components"] for s in ropescope.schemes()}["mrope"], 3)
        rows = {p["key"]: p for p in ropescope.parameters()}
        self.assertEqual((rows["alpha"]["type"], rows["alpha"]["default"], rows["alpha"]["min"], rows["alpha"]["max"]), ("number", 0.5, 0, 1))
        self.assertEqual(rows["alpha"]["schemes"], ["circle"])
        self.assertEqual(rows["text_vector"]["type"], "vector")
        self.assertTrue(any(p["type"] == "choice" and len(p["choices"]) >= 2 for p in rows.values()))

    def test_mrope_positions_by_hand(self):
        t = ropescope.positions("text:2,image:2x3,text:2", "mrope")
        self.assertEqual(t.components, ["t", "h", "w"])
        want = [[0, 0, 0], [1, 1, 1]] + [[2, 2 + r, 2 + c] for r in range(2) for c in range(3)] + [[5, 5, 5], [6, 6, 6]]
        np.testing.assert_array_equal(t.positions, want)
        np.testing.assert_array_equal(t.modality, [0, 0] + [1] * 6 + [0, 0])
        np.testing.assert_array_equal(t.row[2:8], [0, 0, 0, 1, 1, 1])

    def test_parameters_change_the_placement(self):
        a = ropescope.positions("text:3,image:4x4,text:3", "circle", alpha=0.0).positions
        b = ropescope.positions("text:3,image:4x4,text:3", "circle", alpha=1.0).positions
        self.assertFalse(np.allclose(a, b))
        np.testing.assert_array_equal(ropescope.positions("text:3,image:4x4,text:3", "circle", alpha=0.5).positions,
                                      ropescope.positions("text:3,image:4x4,text:3", "circle").positions)

    def test_ptd_against_numpy(self):
        for scheme, params in (("mrope", {}), ("circle", {"alpha": 0.3}), ("vrope", {})):
            t = ropescope.positions("text:3,image:3x4,text:2,image:2x2,text:1", scheme, **params)
            text = np.flatnonzero(t.modality == 0)
            per_block = []
            for seg in np.unique(t.segment[t.modality != 0]):
                block = t.positions[t.segment == seg]
                d = np.linalg.norm(t.positions[text][:, None, :] - block[None, :, :], axis=2)
                per_block.append(np.mean(np.abs(d - d.mean(axis=1, keepdims=True)).mean(axis=1)))
            got = ropescope.ptd(t)
            np.testing.assert_allclose(got["per_block"], per_block, rtol=1e-9, atol=1e-12)
            self.assertAlmostEqual(got["mean"], np.mean(per_block), places=9)
            self.assertEqual(got["per_text_token"].shape, (len(text),))

    def test_prior(self):
        # b(t, i) = sum_j 2 cos(theta^(-2j/d) (p_t - p_i)[c(j)]), M-RoPE's defaults: d = 128, theta = 1e6, the 64
        # frequencies in sections of 16 (t), 24 (h), 24 (w).
        t = ropescope.positions("text:2,image:2x3,text:2", "mrope")
        j = np.arange(64)
        component = np.where(j < 16, 0, np.where(j < 40, 1, 2))
        d = t.positions[9][None, :] - t.positions[t.modality != 0]
        want = 2 * np.cos(1e6 ** (-2 * j / 128.0)[None, :] * d[:, component]).sum(axis=1)
        np.testing.assert_allclose(ropescope.prior(t, 9), want, rtol=1e-12)
        np.testing.assert_allclose(ropescope.prior("text:2,image:2x3,text:2", 9, "mrope"), want, rtol=1e-12)
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.prior(t, 3)  # an image token
        self.assertEqual(caught.exception.parameter, "text_token")

    def test_errors_name_the_parameter(self):
        cases = [({"alpha": 3}, "alpha", "must be in [0, 1]"),
                 ({"alpha": "x"}, "alpha", "expected a number"),
                 ({"nope": 1}, "nope", "no such parameter"),
                 ({"text_vector": (1, 2)}, "text_vector", "three numbers"),
                 ({"radius_mode": "sideways"}, "radius_mode", "expected")]
        for params, key, words in cases:
            with self.subTest(params=params):
                with self.assertRaises(ropescope.InvalidInput) as caught:
                    ropescope.positions("text:2,image:2x2", "circle", **params)
                self.assertEqual(caught.exception.parameter, key)
                self.assertIn(words, str(caught.exception))
        with self.assertRaises(ropescope.InvalidInput) as caught:
            ropescope.positions("text:2,image:2x2", "spiral")
        self.assertEqual(caught.exception.parameter, "scheme")
        with self.assertRaises(ropescope.InvalidInput):
            ropescope.positions("text:2,picture:2x2", "mrope")
        with self.assertRaises(ropescope.InvalidInput):
            ropescope.ptd("text:4", "mrope")  # no visual tokens


if __name__ == "__main__":
    unittest.main()

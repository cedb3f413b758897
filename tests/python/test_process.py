"""What importing ropescope brings into the caller's process: neither LibTorch nor Qt (the package's design
constraint), and beside Debian's torch, in one process, rope_index and check_positions take torch tensors and the
process exits cleanly."""
import os
import subprocess
import sys
import unittest

import numpy as np

import ropescope

HERE = os.path.dirname(os.path.abspath(__file__))


def have_torch():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


class Process(unittest.TestCase):
    def test_no_libtorch_and_no_qt_are_loaded(self):
        ropescope.rope_index("qwen2-vl", np.array([[1, 2, 3]]))
        with open("/proc/self/maps") as f:
            maps = f.read()
        self.assertIn("libropescope_c.so", maps)
        for library in ("libtorch", "libc10", "libQt6", "libQt5"):
            self.assertNotIn(library, maps, library + " is loaded into the caller's process")

    @unittest.skipUnless(have_torch(), "python3-torch is not installed (Debian's python3-torch; scripts/setup.sh leaves it out)")
    def test_beside_torch_in_one_process(self):
        script = """
import numpy as np, torch, ropescope
ids = torch.tensor([[0, 0, 5, 6, 250] + [253] * 6 + [251, 7], [5, 6, 250] + [253] * 6 + [251, 7, 8, 9]])
mask = torch.tensor([[0, 0] + [1] * 11, [1] * 13])
grids = torch.tensor([[1, 4, 6], [1, 4, 6]])
pos, deltas = ropescope.rope_index("qwen2-vl", ids, grids, attention_mask=mask, image_token_id=253)
report = ropescope.check_positions(torch.from_numpy(pos), ids, "qwen2-vl", grids, attention_mask=mask, rope_deltas=torch.from_numpy(deltas),
                                   image_token_id=253)
assert report.ok, report
t = torch.ones(3, 3) @ torch.ones(3, 3)  # torch still works beside the library
print(pos[0, 0].tolist(), deltas.ravel().tolist(), float(t.sum()))
"""
        for order in ("import ropescope, torch\n", "import torch, ropescope\n"):
            with self.subTest(first=order.split()[1]):
                run = subprocess.run([sys.executable, "-c", order + script], capture_output=True, text=True, timeout=300,
                                     env=dict(os.environ))
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(run.stdout.strip(), "[1, 1, 0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7] [-5, -3] 27.0")


if __name__ == "__main__":
    unittest.main()

"""RopeScope in your own Python: every model family's position rule as a fast get_rope_index, check-positions on
a batch or inside a data collator, the built-in schemes' positions and metrics, and models run through the
`ropescope` binary in its own process (forward, attend).

The package loads libropescope_c (no LibTorch, no Qt: safe beside PyTorch and PyQt) through ctypes, takes numpy
arrays (or lists, or CPU torch tensors, read through np.asarray) and returns numpy arrays. docs/PYTHON.md.
"""
from ._lib import InvalidInput, RopeScopeError
from .collator import CheckedCollator, PositionMismatch
from .rope import CheckReport, SampleCheck, check_positions, families, gemma4_patch_positions, rope_index
from .runner import attend, forward
from .schemes import PositionTable, parameters, positions, prior, ptd, schemes

__all__ = ["InvalidInput", "RopeScopeError", "rope_index", "check_positions", "CheckReport", "SampleCheck", "families",
           "gemma4_patch_positions", "CheckedCollator", "PositionMismatch", "schemes", "parameters", "positions", "ptd", "prior",
           "PositionTable", "forward", "attend"]

# RopeScope's side of a Python scheme, run inside the worker process's interpreter (core/user_schemes/worker_main.cpp).
# It loads a user's scheme file, describes a layout to it in RopeScope's words and in transformers', and
# checks what the file returns, so the C++ side receives either a float64 [C, L] array or one line that
# names what is wrong (file:line for an error in the user's code).
import importlib.util
import math
import os
import sys
import traceback
import types

import numpy as np

# Qwen2-VL's special ids: what a get_rope_index lifted from a modeling file looks for.
IMAGE_TOKEN_ID = 151655
VIDEO_TOKEN_ID = 151656
VISION_START_TOKEN_ID = 151652
VISION_END_TOKEN_ID = 151653
TEXT_TOKEN_ID = 0
time_limit = 2.0  # seconds; set by the worker (CallDeadline) before each call


class SchemeError(Exception):
    """What a scheme file did wrong, in one line (raised by this module, never by user code)."""


class SchemeTimeout(BaseException):
    """Raised into a call that ran past its time (a BaseException, so `except Exception` does not swallow it)."""


class Segment:
    """One segment: kind 'text', 'image' or 'video'; start (its first token), length (tokens), and for a visual
    segment its merged grid: frames (t), rows (h), cols (w)."""

    __slots__ = ("kind", "start", "length", "frames", "rows", "cols")

    def __init__(self, kind, start, length, frames, rows, cols):
        self.kind, self.start, self.length = kind, start, length
        self.frames, self.rows, self.cols = frames, rows, cols

    def __repr__(self):
        if self.kind == "text":
            return "text:%d" % self.length
        if self.kind == "image":
            return "image:%dx%d" % (self.rows, self.cols)
        return "video:%dx%dx%d" % (self.frames, self.rows, self.cols)


class Layout:
    """A token sequence, two ways.

    RopeScope's: `segments` (Segment objects in order) and `tokens` (L).
    transformers': `input_ids` [1, L] (image / video tokens carry IMAGE_TOKEN_ID / VIDEO_TOKEN_ID, the text
    token before each visual segment VISION_START_TOKEN_ID, the one after it VISION_END_TOKEN_ID),
    `image_grid_thw` and `video_grid_thw` [n, 3] before the 2 x 2 merge (t, 2h, 2w) as the processor returns
    them, `attention_mask`, `spatial_merge_size` and the special ids, so a get_rope_index lifted from a
    modeling file runs as it is."""

    spatial_merge_size = 2
    image_token_id = IMAGE_TOKEN_ID
    video_token_id = VIDEO_TOKEN_ID
    vision_start_token_id = VISION_START_TOKEN_ID
    vision_end_token_id = VISION_END_TOKEN_ID

    def __init__(self, spec, segments):
        self.spec = spec
        self.segments = []
        start = 0
        for kind, length, frames, rows, cols in segments:
            self.segments.append(Segment(kind, start, length, frames, rows, cols))
            start += length
        self.tokens = start
        ids = np.full((1, self.tokens), TEXT_TOKEN_ID, dtype=np.int64)
        images, videos = [], []
        for i, s in enumerate(self.segments):
            if s.kind == "text":
                continue
            ids[0, s.start:s.start + s.length] = IMAGE_TOKEN_ID if s.kind == "image" else VIDEO_TOKEN_ID
            if i > 0 and self.segments[i - 1].kind == "text":
                ids[0, s.start - 1] = VISION_START_TOKEN_ID
            if i + 1 < len(self.segments) and self.segments[i + 1].kind == "text":
                ids[0, s.start + s.length] = VISION_END_TOKEN_ID
            grid = [s.frames, s.rows * self.spatial_merge_size, s.cols * self.spatial_merge_size]
            (images if s.kind == "image" else videos).append(grid)
        self.input_ids = ids
        self.attention_mask = np.ones_like(ids)
        self.image_grid_thw = np.array(images, dtype=np.int64).reshape(-1, 3)
        self.video_grid_thw = np.array(videos, dtype=np.int64).reshape(-1, 3)

    def __len__(self):
        return self.tokens

    def __repr__(self):
        return "Layout(%r)" % self.spec


def _where(error, tb, path):
    """file:line of an error, preferring the innermost frame in the scheme file."""
    if isinstance(error, SyntaxError) and error.lineno:
        return "%s:%d" % (os.path.basename(error.filename or path), error.lineno)
    frames = traceback.extract_tb(tb)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    if not mine:  # raised outside the file (a call with the wrong arguments): the file, no line
        return os.path.basename(path)
    frame = mine[-1]
    return "%s:%d" % (os.path.basename(frame.filename), frame.lineno)


def describe(error, tb, path, what):
    """(one line, the traceback's last lines) for an error raised while running `what` of the file."""
    if isinstance(error, SchemeError):
        return "%s: %s" % (os.path.basename(path), error), str(error)
    if isinstance(error, SchemeTimeout):
        line = "%s: %s ran longer than %g s and was stopped" % (_where(error, tb, path), what, time_limit)
        return line, line
    message = str(error).splitlines()[0] if str(error) else ""
    if isinstance(error, SyntaxError):
        message = error.msg
    line = "%s: %s%s" % (_where(error, tb, path), type(error).__name__, ": " + message if message else "")
    # The traceback's frames in the user's file (RopeScope's own are noise to them), then the error itself.
    mine = [f for f in traceback.extract_tb(tb) if os.path.abspath(f.filename) == os.path.abspath(path)]
    frames = traceback.format_list(mine[-4:])
    detail = "".join(frames + traceback.format_exception_only(type(error), error))
    return line, detail.rstrip()


class _FolderModules:
    """An import finder for the .py files beside a scheme, served from the bytes RopeScope read and hashed
    (only when the user let the scheme import its folder). It comes first, so such a file shadows a standard
    module exactly as it would beside a script, and trust covers it."""

    def __init__(self, modules):
        self.modules = {name: (path, source) for name, path, source in modules}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.modules[fullname][0])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        file, source = self.modules[module.__name__]
        module.__file__ = file
        exec(compile(source, file, "exec"), module.__dict__)


def load(path, source, modules=()):
    """Runs the file's source (the bytes RopeScope hashed, sent over; never read again from disk) as a module.
    The scheme's folder is not on sys.path: an import finds the standard library and installed packages only."""
    name = os.path.splitext(os.path.basename(path))[0] or "scheme"
    module = types.ModuleType(name)
    module.__file__ = path
    if modules:
        sys.meta_path.insert(0, _FolderModules(modules))
    code = compile(source, path, "exec")
    exec(code, module.__dict__)
    if not callable(getattr(module, "positions", None)):
        raise SchemeError("defines no positions(layout, **params) function")
    return module


def parameters(module):
    """PARAMETERS as [(name, default, min, max)], checked."""
    declared = getattr(module, "PARAMETERS", {})
    if not isinstance(declared, dict):
        raise SchemeError("PARAMETERS must be a dict of name: (default, min, max), got %s" % type(declared).__name__)
    out = []
    for name, spec in declared.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SchemeError("PARAMETERS: %r is not a parameter name" % (name,))
        try:
            default, low, high = (float(v) for v in spec)
        except (TypeError, ValueError):
            raise SchemeError("PARAMETERS[%r] must be (default, min, max), got %r" % (name, spec)) from None
        if not all(math.isfinite(v) for v in (default, low, high)) or not low <= default <= high:
            raise SchemeError("PARAMETERS[%r]: need finite min <= default <= max, got %r" % (name, spec))
        out.append((name, default, low, high))
    return out


def components(module):
    """COMPONENTS as a list of names, or None when the file leaves them to its positions' row count."""
    names = getattr(module, "COMPONENTS", None)
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names) or not 1 <= len(names) <= 4:
        raise SchemeError("COMPONENTS must be a list of 1 to 4 names, got %r" % (names,))
    return list(names)


def _as_array(result, what):
    if result is None or isinstance(result, (str, bytes, dict)):
        raise SchemeError("%s returned %s; expected an array" % (what, "None" if result is None else "a " + type(result).__name__))
    if hasattr(result, "detach") and hasattr(result, "cpu"):  # a torch tensor, possibly on a GPU or with grad
        result = result.detach().cpu()
    try:
        a = np.asarray(result)
    except (TypeError, ValueError) as e:
        raise SchemeError("%s returned a %s that is not numeric (%s)" % (what, type(result).__name__, str(e).splitlines()[0])) from None
    # Numbers only: "1" is not a position, and a complex value would lose its imaginary part.
    if a.dtype.kind not in "iuf":
        kind = {"c": "complex numbers", "U": "strings", "S": "bytes", "b": "booleans", "O": "objects that are not plain numbers"}
        raise SchemeError("%s returned %s; expected real numbers" % (what, kind.get(a.dtype.kind, "values of type %s" % a.dtype)))
    return a.astype(np.float64, copy=False)


def call_positions(module, layout, params, expected_components):
    """positions(layout, **params) as a C-contiguous float64 [C, L] array, checked."""
    a = _as_array(module.positions(layout, **params), "positions()")
    if a.ndim == 3 and a.shape[1] == 1:  # transformers' position_ids [C, 1, L]
        a = a[:, 0, :]
    if a.ndim == 1:  # one component
        a = a[None, :]
    if a.ndim != 2:
        raise SchemeError("positions() returned shape %s; expected [C, L] = [1..4, %d]" % (list(a.shape), layout.tokens))
    c, n = a.shape
    if n != layout.tokens:
        raise SchemeError("positions() returned %d positions per component for a layout of %d tokens (%s)" % (n, layout.tokens, layout.spec))
    if not 1 <= c <= 4:
        raise SchemeError("positions() returned %d components; expected 1 to 4 (shape [C, L])" % c)
    if expected_components and c != expected_components:
        raise SchemeError("positions() returned %d components; COMPONENTS names %d" % (c, expected_components))
    bad = np.flatnonzero(~np.isfinite(a).all(axis=0))
    if bad.size:
        raise SchemeError("positions() returned %s at token %d" % ("NaN" if np.isnan(a[:, bad[0]]).any() else "an infinite value", bad[0]))
    return np.ascontiguousarray(a)


def call_allocation(module, head_dim, pairs, components):
    """allocation(head_dim) as a list of component indices, one per rotated pair; None when not defined."""
    function = getattr(module, "allocation", None)
    if function is None:
        return None
    a = _as_array(function(head_dim), "allocation()")
    if a.ndim != 1 or a.shape[0] != pairs:
        raise SchemeError("allocation(%d) returned shape %s; expected %d component indices, one per rotated pair" % (head_dim, list(a.shape), pairs))
    if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)) or a.min() < 0 or a.max() >= components:
        raise SchemeError("allocation(%d) must return whole numbers from 0 to %d (the components)" % (head_dim, components - 1))
    return [int(v) for v in a]

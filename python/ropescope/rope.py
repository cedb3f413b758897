"""The model families' position rules: transformers' get_rope_index as one C call (rope_index), and a
pipeline's position ids checked against it as `ropescope check-positions` checks a dump (check_positions).

Both take numpy arrays (or anything np.asarray reads: lists, CPU torch tensors) and never import torch.
"""
import ctypes
import json
import os
import stat
import threading

import numpy as np

from ._lib import Batch, Handle, InvalidInput, Ints, Reals, Sample, c_text, check, lib, text, whole

_AXES = ("t", "h", "w", "text")
_XD_AXES = ("p", "w", "h", "t")  # xd-rope's own four rows
_SEQUENTIAL_AXES = ("position",)  # gemma3, gemma4: one position per token
_CONFIG_BYTES = 16 << 20  # as the CLI reads a model's config.json (core/model/analysis/position_check.cpp)


def families():
    """The families' names (config.json model_types, MoE members included, are accepted too)."""
    return text(lib.rs_family_names()).split(", ")


def _array(name, value):
    try:
        return np.asarray(value)
    except Exception as e:  # ragged lists, CUDA tensors, objects that are not arrays
        raise InvalidInput("%s: not an array (%s)%s" % (name, e, "; a CUDA tensor? pass .cpu()" if "cuda" in str(e).lower() else ""),
                           name) from None


def _ints(name, value, keep):
    """An int64 C view of an integer (or bool) array; None stays absent."""
    v = Ints()
    if value is None:
        return v
    a = _array(name, value)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    elif a.dtype.kind not in "iu":  # numpy counts timedelta64 among the integers; its values are not ids
        raise InvalidInput("%s: expected whole numbers (an integer or bool array), got %s" % (name, a.dtype), name)
    elif not np.issubdtype(a.dtype, np.integer):
        raise InvalidInput("%s: expected whole numbers (an integer or bool array), got %s" % (name, a.dtype), name)
    if a.ndim > 4:
        raise InvalidInput("%s: at most 4 dimensions, got shape %s" % (name, tuple(a.shape)), name)
    if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise InvalidInput("%s: holds values above 2^63 - 1" % name, name)
    return _view(v, np.ascontiguousarray(a, dtype=np.int64), ctypes.c_int64, keep)


def _reals(name, value, keep):
    v = Reals()
    if value is None:
        return v
    a = _array(name, value)
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_) or np.issubdtype(a.dtype, np.complexfloating):
        raise InvalidInput("%s: expected real numbers, got %s" % (name, a.dtype), name)
    if a.ndim > 4:
        raise InvalidInput("%s: at most 4 dimensions, got shape %s" % (name, tuple(a.shape)), name)
    return _view(v, np.ascontiguousarray(a, dtype=np.float64), ctypes.c_double, keep)


def _view(v, a, ctype, keep):
    """Fills the C view `v` over the contiguous array `a`, kept alive in `keep` until the call returns."""
    keep.append(a)
    v.given = 1
    v.ndim = a.ndim
    for i, d in enumerate(a.shape):
        v.shape[i] = d
    v.data = a.ctypes.data_as(ctypes.POINTER(ctype))
    return v


def _batch(input_ids, image_grid_thw, video_grid_thw, mm_token_type_ids, attention_mask, second_per_grid_ts, keep):
    if input_ids is None:
        raise InvalidInput("input_ids: required", "input_ids")
    b = Batch()
    b.input_ids = _ints("input_ids", input_ids, keep)
    b.attention_mask = _ints("attention_mask", attention_mask, keep)
    b.mm_token_type_ids = _ints("mm_token_type_ids", mm_token_type_ids, keep)
    b.image_grid_thw = _ints("image_grid_thw", image_grid_thw, keep)
    b.video_grid_thw = _ints("video_grid_thw", video_grid_thw, keep)
    b.second_per_grid_ts = _reals("second_per_grid_ts", second_per_grid_ts, keep)
    return b


def _config_values(config):
    """The position settings of a model's config: a dict (config.json loaded), a path to config.json or its folder,
    or a transformers config (anything with to_dict())."""
    if config is None:
        return {}
    if isinstance(config, (str, os.PathLike)):
        config = _read_config(config)
    elif hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise InvalidInput("config: expected a dict, a config.json path or a transformers config, got %s" % type(config).__name__,
                           "config")
    vision, textc = _section(config, "vision_config"), _section(config, "text_config")
    return {"model_type": config.get("model_type"),
            "image_token_id": config.get("image_token_id", config.get("image_token_index")),
            "video_token_id": config.get("video_token_id", config.get("video_token_index")),
            "spatial_merge_size": vision.get("spatial_merge_size"),
            "tokens_per_second": vision.get("tokens_per_second"),
            "vocab_size": textc.get("vocab_size", config.get("vocab_size")),
            # xd-rope (HunyuanVL, HunyuanOCR): the tokens that open an image span and bracket a video
            "spans": (config.get("image_start_token_id"), config.get("video_start_token_id"), config.get("video_end_token_id")),
            # gemma3, gemma4: the tokens a report names (Gemma 3 spells them *_token_index)
            "markers": tuple(config.get(k + "_token_id", config.get(k + "_token_index")) for k in ("audio", "boi", "eoi"))}


def _read_config(given):
    """config.json at `given` (or in that folder): a regular file of at most 16 MiB, read as the CLI reads it. A
    FIFO is opened without waiting for a writer and refused; /dev/zero is not a regular file either."""
    path = os.fspath(given)
    if isinstance(path, str) and "\x00" in path:
        raise InvalidInput("config: the path holds a NUL character", "config")
    path = os.path.join(path, "config.json") if os.path.isdir(path) else path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInput("config: %s is not a regular file" % path, "config")
            data = f.read(_CONFIG_BYTES + 1)
        if len(data) > _CONFIG_BYTES:
            raise InvalidInput("config: %s is larger than %d MiB" % (path, _CONFIG_BYTES >> 20), "config")
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise InvalidInput("config: %s nests too deep to be a model's config" % path, "config") from None
    except (OSError, ValueError) as e:
        raise InvalidInput("config: %s cannot be read as JSON (%s)" % (path, e), "config") from None


def _section(config, name):
    """config's vision_config or text_config: a dict, or absent."""
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise InvalidInput("config: %s: expected an object, got %s" % (name, type(value).__name__), name)
    return value


def _setting(name, value):
    """A config or keyword setting, checked before it keys the rule cache (a list would not hash) and before ctypes
    (2^64 + 5 would wrap to 5): a whole number from 0 to 2^63 - 1, or None."""
    return None if value is None else whole(name, value)


def _span_ids(spans, names=("image_start_token_id", "video_start_token_id", "video_end_token_id")):
    """config.json's xd-rope span ids (or Gemma's markers), checked before they key the rule cache (a list there would
    not hash)."""
    for name, v in zip(names, spans):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise InvalidInput("config: %s: expected a whole number, got %r" % (name, v), name)
    return tuple(_setting(name, v) for name, v in zip(names, spans))


def _tokens_per_second(tps):
    """A real number above 0 (the library reads a negative one as "leave the default", so it is refused here)."""
    if tps is None:
        return -1.0
    if isinstance(tps, (bool, np.bool_)) or not isinstance(tps, (int, float, np.integer, np.floating)):
        raise InvalidInput("tokens_per_second: expected a number, got %r" % (tps,), "tokens_per_second")
    if not float(tps) > 0:
        raise InvalidInput("tokens_per_second: must be above 0 and below 1e6, got %r" % (tps,), "tokens_per_second")
    return float(tps)


class _Rule:
    def __init__(self, family, image_token_id, video_token_id, spatial_merge_size, tokens_per_second, vocab_size, spans=(None,) * 3,
                 markers=(None,) * 3):
        handle = ctypes.c_void_p()
        check(lib.rs_rule_new(c_text("family", family), ctypes.byref(handle)))
        self._owner = Handle(handle, lib.rs_rule_free)

        def setting(name, v):  # -1: the library keeps its default
            return -1 if v is None else whole(name, v)

        tps = _tokens_per_second(tokens_per_second)
        merge = setting("spatial_merge_size", spatial_merge_size)
        if merge == 0 or merge > 64:
            raise InvalidInput("spatial_merge_size: must be from 1 to 64, got %d" % merge, "spatial_merge_size")
        check(lib.rs_rule_configure(handle, setting("image_token_id", image_token_id), setting("video_token_id", video_token_id), merge,
                                    tps, max(setting("vocab_size", vocab_size), 0)))
        check(lib.rs_rule_configure_spans(handle, *(setting(n, v) for n, v in zip(
            ("image_start_token_id", "video_start_token_id", "video_end_token_id"), spans))))
        check(lib.rs_rule_configure_markers(handle, *(setting(n, v) for n, v in zip(_MARKERS, markers))))
        self.family = text(lib.rs_rule_family(handle))
        self.components = lib.rs_rule_components(handle)
        self.axes = {4: _XD_AXES, 1: _SEQUENTIAL_AXES}.get(self.components, _AXES)

    @property
    def handle(self):
        return self._owner.pointer


_MARKERS = ("audio_token_id", "boi_token_id", "eoi_token_id")
_rules = {}
_rules_lock = threading.Lock()


def _rule(family, config, image_token_id, video_token_id, spatial_merge_size, tokens_per_second, vocab_size):
    c = _config_values(config)
    if family is None:
        family = c.get("model_type")
        if family is None:
            raise InvalidInput("family: required (or a config with its model_type)", "family")
    if not isinstance(family, str):
        raise InvalidInput("family: expected a name such as %s, got %r" % (", ".join(families()), family), "family")
    c_text("family", family)
    tps = c.get("tokens_per_second") if tokens_per_second is None else tokens_per_second
    _tokens_per_second(tps)  # checked before it keys the cache
    key = (family,
           _setting("image_token_id", c.get("image_token_id") if image_token_id is None else image_token_id),
           _setting("video_token_id", c.get("video_token_id") if video_token_id is None else video_token_id),
           _setting("spatial_merge_size", c.get("spatial_merge_size") if spatial_merge_size is None else spatial_merge_size),
           tps,
           _setting("vocab_size", c.get("vocab_size") if vocab_size is None else vocab_size),
           _span_ids(c.get("spans", (None,) * 3)),
           _span_ids(c.get("markers", (None,) * 3), _MARKERS))
    with _rules_lock:
        rule = _rules.get(key)
    if rule is None:
        rule = _Rule(*key)
        with _rules_lock:
            if len(_rules) > 64:
                _rules.clear()
            _rules[key] = rule
    return rule


def rope_index(family, input_ids, image_grid_thw=None, video_grid_thw=None, mm_token_type_ids=None, attention_mask=None,
               second_per_grid_ts=None, *, config=None, image_token_id=None, video_token_id=None, spatial_merge_size=None,
               tokens_per_second=None, vocab_size=None):
    """transformers' get_rope_index for `family`: returns (position_ids [3, B, L], rope_deltas [B, 1]), int64.

    family: qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl, ernie-vl, xd-rope, gemma3, gemma4, or a
    config.json model_type (qwen3_vl_moe, glm4v_moe, ernie4_5_vl_moe, hunyuan_vl, gemma3_text, gemma4_text, ...: an
    MoE member takes its dense sibling's rule); None takes config's model_type.
    gemma3 and gemma4 give every token, image, video and audio soft tokens alike, one position: position_ids is
    [B, L] as transformers' (generate's attention_mask.cumsum(-1) - 1, padding 1; without a mask 0..L-1), and
    rope_deltas [B, 1] is its max + 1 - L (minus the padding: the next token's position is L + delta). They take no
    grids (image_grid_thw and the like are refused: another family's batch).
    ernie-vl is ERNIE-4.5-VL's rule (by mm_token_type_ids; video_grid_thw's t counts frames, two to a step of t),
    with huggingface/transformers#45400's fix. xd-rope is HunyuanOCR's and HunyuanVL's (vLLM's
    get_xdrope_input_positions): position_ids [4, B, L] in rows p, w, h, t, each image (or video frame) a span
    after its image-start token of h * (w + 1) + 2 image tokens; config's image_start_token_id,
    video_start_token_id and video_end_token_id are read.
    config: the model's config (a dict, a config.json path or folder, a transformers config) for its image and
    video token ids, spatial_merge_size, tokens_per_second and vocab_size; the keyword arguments override it.
    Without either: the Hub's ids (151655 image, 151656 video), merge size 2, 2 tokens per second.
    GLM-V and PaddleOCR-VL find vision tokens by mm_token_type_ids (1 image, 2 video), which they need.
    Padding (attention_mask 0) gets position 1, as transformers leaves it; rope_deltas is max position + 1 - L.
    Raises InvalidInput naming what is wrong (dtype, shape, a grid that does not fit the ids, an unknown family).
    """
    rule = _rule(family, config, image_token_id, video_token_id, spatial_merge_size, tokens_per_second, vocab_size)
    keep = []
    b = _batch(input_ids, image_grid_thw, video_grid_thw, mm_token_type_ids, attention_mask, second_per_grid_ts, keep)
    shape = keep[0].shape
    if len(shape) != 2:
        raise InvalidInput("'input_ids' must be [B, L], got shape %s" % (tuple(shape),), "input_ids")
    rows, length = shape
    positions = np.empty((rule.components, rows, length), dtype=np.int64)
    deltas = np.empty((rows, 1), dtype=np.int64)
    check(lib.rs_rope_index(rule.handle, ctypes.byref(b), positions.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), positions.size,
                            deltas.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), deltas.size))
    return (positions[0] if rule.components == 1 else positions), deltas


class SampleCheck:
    """One sample against the rule: `ok`, or the difference as check-positions names it."""
    __slots__ = ("row", "tokens", "kind", "words", "detail", "first_token", "axis", "got", "expected", "segment", "differing",
                 "sequences")

    def __init__(self, s, axes=_AXES):
        self.row = s.row
        self.tokens = s.tokens
        self.kind = text(s.kind)  # "none", "1-d", "temporal", "offset", "rope-deltas", "other"
        self.words = text(s.words)
        self.detail = text(s.detail)
        self.first_token = s.first_token if s.first_token >= 0 else None
        self.axis = axes[s.axis] if 0 <= s.axis < len(axes) else None
        self.got = s.got
        self.expected = s.expected
        self.segment = text(s.segment) or None
        self.differing = s.differing
        self.sequences = s.sequences  # gemma3, gemma4: packed sequences in the row (positions that restart at 0)

    @property
    def ok(self):
        return self.kind == "none"

    def __str__(self):
        # As `ropescope check-positions` lists a sample.
        s = "row %d: %s" % (self.row, self.kind)
        if self.detail:
            s += " (%s)" % self.detail
        if self.first_token is not None:
            axis = "" if self.axis == "position" else ", axis %s" % self.axis
            s += "; first at token %d (%s)%s: got %d, expected %d" % (self.first_token, self.segment, axis, self.got, self.expected)
        return s

    __repr__ = __str__


class CheckReport:
    """Every sample of a batch checked: `samples` in row order, `ok` when all match, `differing` the others."""

    def __init__(self, family, samples):
        self.family = family
        self.samples = samples

    @property
    def ok(self):
        return all(s.ok for s in self.samples)

    @property
    def differing(self):
        return [s for s in self.samples if not s.ok]

    def __len__(self):
        return len(self.samples)

    def __iter__(self):
        return iter(self.samples)

    def __getitem__(self, i):
        return self.samples[i]

    def __str__(self):
        d = self.differing
        kinds = {}
        for s in d:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        head = "%s: %d checked, %d differ" % (self.family, len(self.samples), len(d))
        if kinds:
            head += ": " + ", ".join("%s %d" % kv for kv in sorted(kinds.items()))
        return "\n".join([head] + ["  " + str(s) for s in d])

    __repr__ = __str__


def check_positions(position_ids, input_ids, family, image_grid_thw=None, video_grid_thw=None, mm_token_type_ids=None,
                    attention_mask=None, second_per_grid_ts=None, rope_deltas=None, *, config=None, image_token_id=None,
                    video_token_id=None, spatial_merge_size=None, tokens_per_second=None, vocab_size=None):
    """A pipeline's position_ids ([3, B, L], or [4, B, L] with the text row first; xd-rope's own [4, B, L] rows p, w, h,
    t; gemma3's and gemma4's [B, L], or [1, B, L]) and, if given, rope_deltas, checked against the family's rule sample
    by sample, by the code `ropescope check-positions` runs. Returns a CheckReport. The other arguments are
    rope_index's. gemma3 and gemma4 rows may be packed: a position of 0 after a row's first attended token starts its
    next sequence (transformers' packed format), counted in each sample's `sequences`."""
    rule = _rule(family, config, image_token_id, video_token_id, spatial_merge_size, tokens_per_second, vocab_size)
    keep = []
    b = _batch(input_ids, image_grid_thw, video_grid_thw, mm_token_type_ids, attention_mask, second_per_grid_ts, keep)
    if position_ids is None:
        raise InvalidInput("position_ids: required", "position_ids")
    pos = _ints("position_ids", position_ids, keep)
    deltas = _ints("rope_deltas", rope_deltas, keep)
    handle = ctypes.c_void_p()
    check(lib.rs_check_positions(rule.handle, ctypes.byref(b), ctypes.byref(pos), ctypes.byref(deltas), ctypes.byref(handle)))
    try:
        samples = []
        for i in range(lib.rs_check_count(handle)):
            s = Sample()
            check(lib.rs_check_sample(handle, i, ctypes.byref(s)))
            samples.append(SampleCheck(s, rule.axes))
    finally:
        lib.rs_check_free(handle)
    return CheckReport(rule.family, samples)


def gemma4_patch_positions(height_patches, width_patches, max_patches):
    """Gemma 4's image_position_ids for one image of height_patches x width_patches patches: [max_patches, 2] int64 of
    (x, y), the patches row by row (x fastest), then (-1, -1) for the padding up to max_patches (the image processor's
    max_soft_tokens x pooling_kernel_size ** 2, e.g. 280 x 9 = 2520), as transformers' Gemma4ImageProcessor writes
    them; each frame of a video's video_position_ids is the same. np.stack them for a batch of images.
    Raises InvalidInput naming the argument (sizes that are not positive whole numbers, or do not fit)."""
    h = whole("height_patches", height_patches)
    w = whole("width_patches", width_patches)
    n = whole("max_patches", max_patches, 1, 1 << 20)
    out = np.empty((n, 2), dtype=np.int64)
    check(lib.rs_gemma4_patch_positions(h, w, n, out.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), out.size))
    return out

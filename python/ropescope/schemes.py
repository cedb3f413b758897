"""The built-in schemes (core/geometry, as the CLI and the explorer place them): their names and parameters,
the positions they give a layout, and PTD and the positional prior on those positions."""
import ctypes
import json
import numbers
import os
import re

import numpy as np

from . import _process
from ._lib import Handle, InvalidInput, Parameter, c_text, check, lib, text, whole


def schemes():
    """Every built-in scheme: [{"name", "summary", "components"}], in the registry's order."""
    return [{"name": text(lib.rs_scheme_name(i)), "summary": text(lib.rs_scheme_summary(i)), "components": lib.rs_scheme_components(i)}
            for i in range(lib.rs_scheme_count())]


def parameters():
    """The parameter table: [{"key", "type", "label", "help", "default", "min", "max", "open_min", "choices", "schemes"}]."""
    out = []
    for i in range(lib.rs_parameter_count()):
        p = Parameter()
        check(lib.rs_parameter_info(i, ctypes.byref(p)))
        out.append({"key": text(p.key), "type": text(p.type), "label": text(p.label), "help": text(p.help),
                    "default": p.default_value, "min": p.min, "max": p.max, "open_min": bool(p.open_min),
                    # the library's list reads "fixed, auto or code-auto"
                    "choices": re.split(r", | or ", text(p.choices)) if p.choices else [],
                    "schemes": text(p.schemes).split(", ") if p.schemes else []})
    return out


def _value_text(key, value):
    """A parameter's value as the library reads it: a number, a choice's name, on/off, or x,y,z."""
    if isinstance(value, (bool, np.bool_)):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Real):
        return repr(float(value))
    try:
        items = list(value)
    except TypeError:
        raise InvalidInput("%s: expected a number, a name, True/False or three numbers, got %r" % (key, value), key) from None
    if len(items) != 3 or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
        raise InvalidInput("%s: expected three numbers x,y,z, got %r" % (key, value), key)
    return ",".join(repr(float(v)) for v in items)


class PositionTable:
    """A layout placed by a scheme: `positions` [tokens, components] (float64), `components` their names,
    `modality` (0 text, 1 image, 2 video), `segment`, `frame`, `row`, `col` per token (-1 for text)."""

    def __init__(self, layout, scheme, params, handle=None):
        if not isinstance(layout, str):
            raise InvalidInput("layout: expected text such as 'text:4,image:3x3,text:5', got %r" % (layout,), "layout")
        if not isinstance(scheme, str):
            raise InvalidInput("scheme: expected a scheme's name, got %r" % (scheme,), "scheme")
        if handle is None:
            keys = [str(k) for k in params]
            values = [_value_text(k, v) for k, v in params.items()]
            ckeys = (ctypes.c_char_p * max(len(keys), 1))(*[c_text("parameter", k) for k in keys])
            cvalues = (ctypes.c_char_p * max(len(values), 1))(*[c_text(k, v) for k, v in zip(keys, values)])
            handle = ctypes.c_void_p()
            check(lib.rs_table_new(c_text("layout", layout), c_text("scheme", scheme), len(keys), ckeys, cvalues, ctypes.byref(handle)))
        # Owned by a Handle that copies share: a copy.copy of the table must not free it a second time.
        self._owner = Handle(handle, lib.rs_table_free)
        self.layout = layout
        self.scheme = scheme
        self.params = dict(params)
        n, c = lib.rs_table_tokens(handle), lib.rs_table_components(handle)
        self.positions = np.empty((n, c), dtype=np.float64)
        lib.rs_table_positions(handle, self.positions.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        self.components = [text(lib.rs_table_component_name(handle, i)) for i in range(c)]
        meta = [np.empty(n, dtype=np.int32) for _ in range(5)]
        lib.rs_table_metadata(handle, *[m.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)) for m in meta])
        self.modality, self.segment, self.frame, self.row, self.col = meta

    @property
    def _handle(self):
        return self._owner.pointer

    def __len__(self):
        return self.positions.shape[0]

    def ptd(self):
        """PTD (Circle-RoPE eq. 1): {"mean", "per_block" (images and video frames), "per_text_token"}."""
        blocks, texts = lib.rs_table_blocks(self._handle), lib.rs_table_text_tokens(self._handle)
        mean = ctypes.c_double()
        per_block = np.empty(blocks, dtype=np.float64)
        per_text = np.empty(texts, dtype=np.float64)
        check(lib.rs_table_ptd(self._handle, ctypes.byref(mean), per_block.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                               per_text.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
        return {"mean": mean.value, "per_block": per_block, "per_text_token": per_text}

    def prior(self, text_token):
        """The positional prior of one text token (its index among all tokens) over every visual token."""
        tokens = lib.rs_table_tokens(self._handle)
        token = whole("text_token", text_token, 0, max(tokens - 1, 0))
        # Sized from the C table, never from the writable attributes (modality may have been replaced).
        out = np.empty(tokens - lib.rs_table_text_tokens(self._handle), dtype=np.float64)
        check(lib.rs_table_prior(self._handle, token, out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), out.size))
        return out


def _is_scheme_file(scheme):
    return isinstance(scheme, os.PathLike) or (isinstance(scheme, str) and scheme.endswith(".py"))


def _scheme_file_table(layout, path, params, binary, timeout, scheme_imports):
    """A Python scheme file's positions: `ropescope positions --format json` runs the file in the binary's own
    bounded worker (never in this process), and the table it prints becomes a PositionTable here."""
    if not isinstance(layout, str):
        raise InvalidInput("layout: expected text such as 'text:4,image:3x3,text:5', got %r" % (layout,), "layout")
    args = ["--layout", layout, "--scheme", os.fspath(path), "--format", "json"]
    for key, value in params.items():
        if key in ("theta", "head_dim"):  # the rotary box's; the rest are the file's own PARAMETERS
            args += ["--" + key.replace("_", "-"), _value_text(key, value)]
        elif isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidInput("%s: a Python scheme's parameter is a number, got %r" % (key, value), key)
        else:
            args += ["--param", "%s=%r" % (key, float(value))]
    if scheme_imports:
        args.append("--scheme-imports")
    table = json.loads(_process.run("positions", args, binary, timeout).stdout)
    names = table["component_names"]
    values = np.ascontiguousarray([t["p"] for t in table["tokens"]], dtype=np.float64).reshape(len(table["tokens"]), len(names))
    allocation = table.get("allocation") or {}
    sections = (ctypes.c_int32 * max(len(allocation.get("sections", [])), 1))(*allocation.get("sections", []))
    cnames = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
    rotary = table.get("rotary", {})
    handle = ctypes.c_void_p()
    check(lib.rs_table_from_positions(c_text("layout", layout), c_text("scheme", table["scheme"]), len(names), cnames, values.shape[0],
                                      values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                      allocation["kind"].encode() if "kind" in allocation else None, sections,
                                      len(allocation.get("sections", [])), float(rotary.get("theta", 1e6)),
                                      int(rotary.get("head_dim", 128)), ctypes.byref(handle)))
    return PositionTable(layout, table["scheme"], params, handle)


def positions(layout, scheme="mrope", *, binary=None, timeout=None, scheme_imports=False, **params):
    """The layout placed by a built-in scheme with its defaults and `params` by the parameter table's keys (alpha=0.3,
    radius_mode="auto", text_vector=(1, 1, 1), newline_column=False, and the rotary box's theta and head_dim).
    scheme may also be a Python scheme file ("my_scheme.py", docs/USER_SCHEMES.md): the `ropescope` binary runs it in
    its own bounded worker, as `ropescope positions --scheme my_scheme.py` does (params: the file's PARAMETERS, and
    theta and head_dim; scheme_imports=True lets it import the .py files beside it; binary and timeout as forward's).
    Returns a PositionTable; InvalidInput names a wrong parameter."""
    if _is_scheme_file(scheme):
        return _scheme_file_table(layout, scheme, params, binary, timeout, scheme_imports)
    return PositionTable(layout, scheme, params)


def _table(layout, scheme, params):
    if isinstance(layout, PositionTable):
        if params or scheme is not None:
            raise InvalidInput("scheme: a PositionTable is already placed; give a layout to place it again", "scheme")
        return layout
    return positions(layout, "mrope" if scheme is None else scheme, **params)


def ptd(layout, scheme=None, **params):
    """PTD of a layout under a scheme, a Python scheme file (or of a PositionTable): {"mean", "per_block",
    "per_text_token"}."""
    return _table(layout, scheme, params).ptd()


def prior(layout, text_token, scheme=None, **params):
    """The positional prior of one text token over the visual tokens, under a scheme, a Python scheme file (or of a
    PositionTable)."""
    return _table(layout, scheme, params).prior(text_token)

"""Loading libropescope_c and the ctypes declarations of its C API (capi/ropescope_c.h).

The library links neither LibTorch nor Qt, so loading it next to the caller's PyTorch or PyQt is safe.
It is found, in order, at $ROPESCOPE_C_LIBRARY, beside this file (the build tree's python/ropescope/, where
CMake builds it), and in <repository>/build/python/ropescope/ (this file's source checkout, built with the
README's commands).
"""
import ctypes
import os

import numpy as np

_ABI_VERSION = 4  # 3: rs_rope_index and rs_table_prior take their arrays' capacities; 4: gemma3 and gemma4


class InvalidInput(ValueError):
    """The input is wrong: the message says what, as the CLI says it; `parameter` names the parameter (or is "")."""

    def __init__(self, message, parameter=""):
        super().__init__(message)
        self.parameter = parameter


class RopeScopeError(RuntimeError):
    """Anything else that failed inside the library (out of memory, a missing library)."""


def _candidates():
    given = os.environ.get("ROPESCOPE_C_LIBRARY")
    if given:
        return [given]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "libropescope_c.so"),
            os.path.join(here, os.pardir, os.pardir, "build", "python", "ropescope", "libropescope_c.so")]


def _load():
    tried = _candidates()
    for path in tried:
        if os.path.isfile(path):
            return ctypes.CDLL(os.path.normpath(path))
    raise RopeScopeError("libropescope_c.so not found (looked at " + ", ".join(os.path.normpath(p) for p in tried) +
                         "): build it with `cmake --build build --target ropescope_python`, or set ROPESCOPE_C_LIBRARY")


_I64P = ctypes.POINTER(ctypes.c_int64)
_F64P = ctypes.POINTER(ctypes.c_double)
_I32P = ctypes.POINTER(ctypes.c_int32)


class Ints(ctypes.Structure):
    _fields_ = [("given", ctypes.c_int32), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 4), ("data", _I64P)]


class Reals(ctypes.Structure):
    _fields_ = [("given", ctypes.c_int32), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 4), ("data", _F64P)]


class Batch(ctypes.Structure):
    _fields_ = [("input_ids", Ints), ("attention_mask", Ints), ("mm_token_type_ids", Ints), ("image_grid_thw", Ints),
                ("video_grid_thw", Ints), ("second_per_grid_ts", Reals)]


class Sample(ctypes.Structure):
    _fields_ = [("row", ctypes.c_int64), ("tokens", ctypes.c_int64), ("kind", ctypes.c_char_p), ("words", ctypes.c_char_p),
                ("detail", ctypes.c_char_p), ("first_token", ctypes.c_int64), ("axis", ctypes.c_int32), ("got", ctypes.c_int64),
                ("expected", ctypes.c_int64), ("segment", ctypes.c_char_p), ("differing", ctypes.c_int64),
                ("sequences", ctypes.c_int64)]


class Parameter(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("type", ctypes.c_char_p), ("label", ctypes.c_char_p), ("help", ctypes.c_char_p),
                ("default_value", ctypes.c_double), ("min", ctypes.c_double), ("max", ctypes.c_double), ("open_min", ctypes.c_int32),
                ("choices", ctypes.c_char_p), ("schemes", ctypes.c_char_p)]


def _declare(lib):
    vp = ctypes.c_void_p
    sigs = {
        "rs_last_error": (ctypes.c_char_p, []),
        "rs_last_error_parameter": (ctypes.c_char_p, []),
        "rs_rule_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp)]),
        "rs_rule_free": (None, [vp]),
        "rs_rule_family": (ctypes.c_char_p, [vp]),
        "rs_rule_by_token_types": (ctypes.c_int32, [vp]),
        "rs_rule_configure": (ctypes.c_int, [vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_double, ctypes.c_int64]),
        "rs_rule_configure_spans": (ctypes.c_int, [vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]),
        "rs_rule_configure_markers": (ctypes.c_int, [vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]),
        "rs_rule_components": (ctypes.c_int32, [vp]),
        "rs_gemma4_patch_positions": (ctypes.c_int, [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _I64P, ctypes.c_int64]),
        "rs_family_names": (ctypes.c_char_p, []),
        "rs_rope_index": (ctypes.c_int, [vp, ctypes.POINTER(Batch), _I64P, ctypes.c_int64, _I64P, ctypes.c_int64]),
        "rs_check_positions": (ctypes.c_int, [vp, ctypes.POINTER(Batch), ctypes.POINTER(Ints), ctypes.POINTER(Ints), ctypes.POINTER(vp)]),
        "rs_check_count": (ctypes.c_int64, [vp]),
        "rs_check_sample": (ctypes.c_int, [vp, ctypes.c_int64, ctypes.POINTER(Sample)]),
        "rs_check_free": (None, [vp]),
        "rs_scheme_count": (ctypes.c_int32, []),
        "rs_scheme_name": (ctypes.c_char_p, [ctypes.c_int32]),
        "rs_scheme_summary": (ctypes.c_char_p, [ctypes.c_int32]),
        "rs_scheme_components": (ctypes.c_int32, [ctypes.c_int32]),
        "rs_parameter_count": (ctypes.c_int32, []),
        "rs_parameter_info": (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(Parameter)]),
        "rs_table_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(vp)]),
        "rs_table_from_positions": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.c_int64, _F64P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32,
                                                   ctypes.c_double, ctypes.c_int32, ctypes.POINTER(vp)]),
        "rs_table_free": (None, [vp]),
        "rs_table_tokens": (ctypes.c_int64, [vp]),
        "rs_table_components": (ctypes.c_int32, [vp]),
        "rs_table_component_name": (ctypes.c_char_p, [vp, ctypes.c_int32]),
        "rs_table_blocks": (ctypes.c_int64, [vp]),
        "rs_table_text_tokens": (ctypes.c_int64, [vp]),
        "rs_table_positions": (None, [vp, _F64P]),
        "rs_table_metadata": (None, [vp, _I32P, _I32P, _I32P, _I32P, _I32P]),
        "rs_table_ptd": (ctypes.c_int, [vp, _F64P, _F64P, _F64P]),
        "rs_table_prior": (ctypes.c_int, [vp, ctypes.c_int64, _F64P, ctypes.c_int64]),
    }
    for name, (result, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = result
        f.argtypes = args
    return lib


def _checked(lib):
    """The library, once its ABI version is this package's: checked before any other symbol is bound, so that an
    older library (one without a symbol, or with another signature) gets this message and not an AttributeError."""
    version = getattr(lib, "rs_abi_version", None)
    if version is None:
        found = "has no ABI version"
    else:
        version.restype, version.argtypes = ctypes.c_int32, []
        found = "has ABI version %d" % version()
        if version() == _ABI_VERSION:
            return lib
    raise RopeScopeError("libropescope_c %s, not this package's %d: rebuild it, or point ROPESCOPE_C_LIBRARY at the library "
                         "built with this package" % (found, _ABI_VERSION))


lib = _declare(_checked(_load()))


def c_text(name, value):
    """A str for the C API as UTF-8: refused by name when it holds a NUL (C would read only what comes before it)
    or cannot be encoded (a lone surrogate)."""
    if "\x00" in value:
        raise InvalidInput("%s: holds a NUL character at %d" % (name, value.index("\x00")), name)
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInput("%s: not valid text (%s)" % (name, e.reason), name) from None


INT64_MAX = 2**63 - 1


def whole(name, value, low=0, high=INT64_MAX):
    """A Python or numpy integer (not a bool) from low to high, as int: refused by name before ctypes would wrap it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidInput("%s: expected a whole number, got %r" % (name, value), name)
    if not low <= int(value) <= high:
        raise InvalidInput("%s: must be from %d to %d, got %d" % (name, low, high, int(value)), name)
    return int(value)


class Handle:
    """A C handle freed once, by `free`, when the last object holding it goes: copies of an object share its Handle
    (copy.copy and deepcopy return the same one), so no copy frees what another still uses."""

    def __init__(self, pointer, free):
        self.pointer = pointer
        self._free = free

    def __del__(self):
        if self.pointer and self._free is not None:
            self._free(self.pointer)
            self.pointer = None

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError("a ropescope object holding a C handle cannot be pickled")


def check(status):
    """Raises the library's error for a non-zero status."""
    if status == 0:
        return
    message = lib.rs_last_error().decode("utf-8", "replace")
    parameter = lib.rs_last_error_parameter().decode("utf-8", "replace")
    if status == 1:
        raise InvalidInput(message, parameter)
    raise RopeScopeError(message)


def text(value):
    return value.decode("utf-8", "replace") if value is not None else None

""".safetensors files with the standard library and numpy (the format: an 8-byte little-endian header length, a
JSON header of dtype, shape and data offsets per tensor, then the raw little-endian data). What forward() and
attend() exchange with the ropescope binary; bfloat16 is read as float32."""
import json
import struct

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1",
           "BOOL": "?"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def load(path):
    """{name: numpy array} and the file's metadata ({} when none)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: not a safetensors file (shorter than its header length)" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: not a safetensors file (its header runs past the end)" % path)
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + n:]
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = body[begin:end]
        if t["dtype"] == "BF16":  # the upper half of a float32
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] in _DTYPES:
            a = np.frombuffer(raw, dtype=_DTYPES[t["dtype"]]).copy()
        else:
            raise ValueError("%s: tensor %s has dtype %s, which this reader does not read" % (path, name, t["dtype"]))
        out[name] = a.reshape(t["shape"])
    return out, metadata


def save(path, tensors, metadata=None):
    """numpy arrays (int64, int32, float32, float64, ...) as safetensors' save_file writes them."""
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, value in tensors.items():
        a = np.ascontiguousarray(value)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        dtype = _NAMES.get(a.dtype)
        if dtype is None:
            raise ValueError("%s: dtype %s cannot be written" % (name, a.dtype))
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

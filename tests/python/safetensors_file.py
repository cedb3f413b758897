"""A .safetensors file read with the standard library and numpy, for the tests: an 8-byte little-endian header
length, a JSON header (dtype, shape, data_offsets per tensor), then the raw little-endian data."""
import json
import struct

import numpy as np

_DTYPES = {"I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?", "F64": "<f8", "F32": "<f4", "F16": "<f2"}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] not in _DTYPES:
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"]).copy()
    return out


def write(path, tensors):
    """int64 tensors as safetensors' save_file writes them (header padded to 8 bytes, contiguous offsets)."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<i8").tobytes()
        header[name] = {"dtype": "I64", "shape": list(np.shape(a)), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

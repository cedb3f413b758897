#!/usr/bin/env python3
"""Writes tests/data/positions/gemma/{gemma3-tiny,gemma4-tiny}: each case of ../shared/fixtures/gemma3-tiny and
gemma4-tiny (transformers 5.16.0.dev0 at c1ff11866b, see that README) without pixels or activations, as a training
pipeline would dump it: input_ids, attention_mask, token_type_ids (Gemma 3) or mm_token_type_ids (Gemma 4) and
transformers' own position_ids [1, L] (the expected file's), with Gemma 4's image_position_ids [n, 630, 2],
video_position_ids [1, frames, 630, 2] (int16: they fit) and num_soft_tokens_per_image / _video. config.json is the
fixture model's. Run: python3 make.py [FIXTURES] (default /work/shared/fixtures)."""
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_NAMES = {np.dtype("<i8"): "I64", np.dtype("<i2"): "I16"}
_READ = {"I64": "<i8", "I32": "<i4", "I16": "<i2", "U8": "u1", "BOOL": "?", "F32": "<f4", "F64": "<f8"}
KEYS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids", "num_soft_tokens_per_image",
        "num_soft_tokens_per_video")
SMALL = ("image_position_ids", "video_position_ids")


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    out = {}
    for name, t in json.loads(data[8:8 + n]).items():
        if name != "__metadata__" and t["dtype"] in _READ:
            begin, end = t["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], _READ[t["dtype"]]).reshape(t["shape"])
    return out


def write(path, tensors):
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        a = tensors[name]
        b = a.tobytes()
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/fixtures"
    for model in ("gemma3-tiny", "gemma4-tiny"):
        src, dst = os.path.join(fixtures, model), os.path.join(HERE, model)
        os.makedirs(dst, exist_ok=True)
        shutil.copyfile(os.path.join(src, "config.json"), os.path.join(dst, "config.json"))
        for name in sorted(os.listdir(src)):
            if not (name.startswith("inputs") and name.endswith(".safetensors")):
                continue
            inputs = read(os.path.join(src, name))
            expected = read(os.path.join(src, name.replace("inputs", "expected")))
            case = {k: inputs[k].astype("<i8") for k in KEYS if k in inputs}
            case.update({k: inputs[k].astype("<i2") for k in SMALL if k in inputs})
            case["position_ids"] = expected["position_ids"].astype("<i8")
            write(os.path.join(dst, name.replace("inputs", "case")), case)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the .pt dumps of tests/data/positions/torch_save and the fuzz seeds of tests/data/fuzz_seeds/pt.

Real ones with torch.save itself (Debian's python3-torch 1.13: `apt-get install python3-torch`, then
/usr/bin/python3 make.py): the qwen3vl-tiny "_multi" fixture case (its inputs and transformers' position_ids and
rope_deltas, read from the fixture's safetensors) in the zip and the legacy form, plainly and as views (an offset
into a larger storage, a transposed layout, a stride-0 expand, int32 and float32 elements) beside entries the
check does not read. Hostile ones by hand, with pickle's opcodes and zipfile in torch.save's layout
(PREFIX/data.pkl, PREFIX/data/KEY, PREFIX/version): each repro of issue 54 item 1 and what is near it.
"""
import collections
import io
import json
import os
import pickle
import struct
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
SEEDS = os.path.join(ROOT, "tests", "data", "fuzz_seeds", "pt")
FIXTURE = os.path.join(ROOT, "tests", "data", "fixtures", "qwen3vl-tiny")
DTYPES = {"I64": torch.int64, "I32": torch.int32, "F32": torch.float32, "F64": torch.float64, "BOOL": torch.bool}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin : 8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).clone()
    return out


def fixture_dump():
    inputs = read_safetensors(os.path.join(FIXTURE, "inputs_multi.safetensors"))
    expected = read_safetensors(os.path.join(FIXTURE, "expected_multi.safetensors"))
    d = {k: v for k, v in inputs.items() if not k.startswith("pixel_values")}
    d["position_ids"] = expected["position_ids"]
    d["rope_deltas"] = expected["rope_deltas"]
    return d


def views_of(d):
    """The same numbers as views a pipeline may save: none of them a plain contiguous tensor of its own."""
    pos = d["position_ids"]
    big = torch.full((3, pos.shape[1], pos.shape[2] + 5), 77, dtype=torch.int64)
    big[:, :, 2 : 2 + pos.shape[2]] = pos
    v = {
        "input_ids": d["input_ids"].to(torch.int32),
        "position_ids": big[:, :, 2 : 2 + pos.shape[2]],  # offset 2, row stride L + 5
        "attention_mask": torch.ones(1, 1, dtype=torch.int64).expand(*d["attention_mask"].shape),  # stride 0
        "image_grid_thw": d["image_grid_thw"].t().contiguous().t(),  # column-major
        "rope_deltas": d["rope_deltas"].to(torch.float32),  # whole numbers as floats
        "pixel_values": torch.rand(4, 6),  # not read
        "step": 7,
        "labels": [1, 2, 3],
    }
    for k, t in d.items():
        v.setdefault(k, t)
    return v


def write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def saved(obj, legacy):
    b = io.BytesIO()
    torch.save(obj, b, _use_new_zipfile_serialization=not legacy)
    return b.getvalue()


# --- hand-written archives -------------------------------------------------------------------------------


class Storage:
    def __init__(self, key, type_name, numel, location="cpu"):
        self.key, self.type_name, self.numel, self.location = key, type_name, numel, location


class Tensor:
    """Pickles as torch.save pickles a tensor: _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class Pickler(pickle.Pickler):
    def __init__(self, f, pid_items=None):
        super().__init__(f, protocol=2)
        self.pid_items = pid_items

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            pid = ("storage", getattr(torch, obj.type_name), obj.key, obj.location, obj.numel)
            return pid[: self.pid_items] if self.pid_items else pid
        return None


def pickled(obj, pid_items=None):
    b = io.BytesIO()
    Pickler(b, pid_items).dump(obj)
    return b.getvalue()


def archive(pkl, records, version=b"3\n", deflate=False):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, data in records.items():
            z.writestr("archive/data/" + key, data)
        if version is not None:
            z.writestr("archive/version", version)
    return b.getvalue()


def longs(*values):
    return struct.pack("<%dq" % len(values), *values)


def one_tensor(offset, size, stride, numel=1, record=None, type_name="LongStorage", location="cpu", key="0"):
    pkl = pickled({"input_ids": Tensor(Storage(key, type_name, numel, location), offset, size, stride)})
    return archive(pkl, {"0": longs(*range(numel)) if record is None else record})


def hostile():
    """(file name, bytes, what the reader must say) for each hand-written repro."""
    cases = [
        ("offset_2p40.pt", one_tensor(1 << 40, [1], [1]), "reaches element 1099511627776"),
        ("negative_offset.pt", one_tensor(-1, [1], [1], numel=6), "has offset -1"),
        ("view_past_storage.pt", one_tensor(0, [10], [1], numel=6), "reaches element 9"),
        ("short_storage.pt", one_tensor(0, [4096], [1], numel=4096, record=longs(5)), "declares 4096 elements (32768 bytes), but its record holds 8 bytes"),
        ("stride0_huge.pt", one_tensor(0, [1 << 14, 1 << 14], [0, 0]), "brings the elements read past"),
        ("meta_storage.pt", one_tensor(0, [6], [1], numel=6, record=b"", location="meta"), "declares 6 elements (48 bytes), but its record holds 0 bytes"),
        ("half_storage.pt", one_tensor(0, [1], [1], type_name="HalfStorage", record=b"\0\0"), "torch.HalfStorage"),
        ("missing_record.pt", one_tensor(0, [1], [1], key="7"), "which the archive lacks"),
        ("reduce_empty.pt", archive(b"\x80\x02R.", {}), "REDUCE at byte 2 finds no value"),
        ("build_empty.pt", archive(b"\x80\x02b.", {}), "opcode BUILD"),
        ("newobj_empty.pt", archive(b"\x80\x02\x81.", {}), "opcode NEWOBJ"),
        ("nested_tuples.pt", archive(b"\x80\x02K\x00" + b"\x85" * 1000000 + b".", {}, deflate=True), "builds more than 131072 values"),
        ("nested_marks.pt", archive(b"\x80\x02" + b"(" * 1000000 + b".", {}, deflate=True), "MARKs"),
        ("os_system.pt", archive(b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00true\x85R.", {}), "posix.system"),
        ("bad_version.pt", archive(pickled({}), {}, version=b"x\n"), "version record is 'x'"),
        ("short_persistent_id.pt", archive(pickled({"input_ids": Tensor(Storage("0", "LongStorage", 1), 0, [1], [1])}, pid_items=3), {"0": longs(1)}), "is not torch.save's"),
        ("memo_never_put.pt", archive(b"\x80\x02h\x05.", {}), "memo 5"),
        ("not_a_dict.pt", saved([1, 2, 3], legacy=False), "holds no dict"),
    ]
    # The legacy form cut inside its last storage, and with a storage's element count changed.
    legacy = saved({"input_ids": torch.arange(6).reshape(1, 6)}, legacy=True)
    cases.append(("legacy_truncated.pt", legacy[:-9], "needs 48 bytes, but the file holds 39"))
    at = len(legacy) - 48 - 8
    assert struct.unpack("<q", legacy[at : at + 8])[0] == 6
    cases.append(("legacy_numel.pt", legacy[:at] + struct.pack("<q", 7) + legacy[at + 8 :], "written with 7"))
    return cases


def main():
    d = fixture_dump()
    for folder in (HERE, SEEDS):
        os.makedirs(folder, exist_ok=True)
    real = {
        "dump_zip.pt": saved(d, legacy=False),
        "dump_legacy.pt": saved(d, legacy=True),
        "dump_views_zip.pt": saved(views_of(d), legacy=False),
        "dump_views_legacy.pt": saved(views_of(d), legacy=True),
        "dump_ordered.pt": saved(collections.OrderedDict(sorted(d.items())), legacy=False),
    }
    # The zip form re-packed with every member deflated (torch.save stores them; a re-zipped dump may not).
    b = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(real["dump_zip.pt"])) as src, zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for member in src.infolist():
            z.writestr(member.filename, src.read(member.filename))
    real["dump_deflated_zip.pt"] = b.getvalue()
    for name, data in real.items():
        write(HERE, name, data)
        write(SEEDS, name, data)
    lines = []
    for name, data, message in hostile():
        write(os.path.join(HERE), "hostile_" + name, data)
        if len(data) < 65536:
            write(SEEDS, "hostile_" + name, data)
        lines.append("hostile_%s\t%s" % (name, message))
    with open(os.path.join(HERE, "hostile.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

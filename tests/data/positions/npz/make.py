#!/usr/bin/env python3
"""Writes the .npz dumps of tests/data/positions/npz (Python's zipfile and zlib, .npy headers by hand):

deflated_big.npz  input_ids of 2^25 + 1 zero bytes (|u1), deflated to some 33 KB: one element past what a dump
                  file's checked tensors may hold, to be refused on its header before the data is inflated.
twice.npz         input_ids.npy twice in the directory.
unread_big.npz    input_ids [1, 3] and a pixel_values.npy whose directory declares 2^28 bytes over a few junk
                  bytes: a key the check does not read, never inflated (inflating it would fail).
"""
import os
import struct
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d," % d for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def main():
    n = (1 << 25) + 1
    with zipfile.ZipFile(os.path.join(HERE, "deflated_big.npz"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("input_ids.npy", npy("|u1", [1, n], bytes(n)))
    ids = npy("<i8", [1, 3], struct.pack("<3q", 1, 2, 3))
    with zipfile.ZipFile(os.path.join(HERE, "twice.npz"), "w") as z:
        z.writestr("input_ids.npy", ids)
        z.writestr(zipfile.ZipInfo("input_ids.npy"), ids)
    # unread_big.npz: a real member, then one whose sizes are patched after writing.
    path = os.path.join(HERE, "unread_big.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("input_ids.npy", ids)
        z.writestr("pixel_values.npy", npy("|u1", [1 << 28], b""), zipfile.ZIP_DEFLATED)
    data = bytearray(open(path, "rb").read())
    at = data.rindex(b"PK\x01\x02")  # pixel_values' directory entry: its inflated size at +24
    declared = len(npy("|u1", [1 << 28], b"")) + (1 << 28)
    data[at + 24 : at + 28] = struct.pack("<I", declared)
    open(path, "wb").write(bytes(data))


if __name__ == "__main__":
    main()

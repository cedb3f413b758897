#pragma once
// NumPy's .npy header (magic, version, a Python-literal dict {'descr': '<f8', 'fortran_order': False,
// 'shape': (3, 15)}), bounds-checked: position tables and position-id dumps (.npz members) read it.
#include <QByteArray>

#include <cstdint>
#include <string>
#include <vector>

namespace ropescope::io {

struct NpyHeader {
    std::string dtype; // kind and bytes, little-endian: "f8", "f4", "i8", "i4", "u1", "b1", ...
    std::vector<long long> shape;
    qsizetype dataOffset = 0; // where the C-ordered data starts
};
// Throws IoError (without a file name; the caller adds it) for anything but a little-endian, C-ordered array
// whose every dimension is at most `maxDimension`.
NpyHeader parseNpyHeader(const QByteArray& bytes, long long maxDimension);

} // namespace ropescope::io

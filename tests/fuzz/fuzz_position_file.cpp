// libFuzzer target: arbitrary bytes as a position table (--positions, File > Open position table). The first
// byte picks the format (CSV, JSON, .npy, .safetensors); the rest is the file.
#include "core/geometry/errors.h"
#include "core/user_schemes/position_file.h"

#include <cmath>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    static const char* const names[] = {"t.csv", "t.json", "t.npy", "t.safetensors"};
    const QByteArray bytes(reinterpret_cast<const char*>(data) + 1, static_cast<qsizetype>(size - 1));
    try {
        const auto file = ropescope::user_schemes::parsePositionFile(bytes, names[data[0] % 4]);
        // What the reader promises: 1 to 4 components, finite positions, a layout of the table's length.
        const int c = file.scheme->components();
        if (c < 1 || c > 4 || static_cast<int>(file.scheme->componentNames().size()) != c)
            __builtin_trap();
        if (file.layout) {
            const Eigen::MatrixXd p = file.scheme->positions(*file.layout, {});
            if (p.rows() != file.layout->tokenCount() || p.cols() != c || !p.allFinite())
                __builtin_trap();
        }
    } catch (const ropescope::geometry::InvalidInput&) { }
    return 0;
}

// libFuzzer target: arbitrary bytes as a check-positions .npz dump: the ZIP directory, stored and deflated
// members, and each member's .npy header, read as the dump reader does (bounded sizes, no reads past the end).
#include "core/io/atomic_file.h"
#include "core/io/npy.h"
#include "core/io/zip_archive.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        for (const auto& [name, member] : ropescope::io::readZipMembers(bytes, int64_t(64) << 20))
            (void)ropescope::io::parseNpyHeader(member, int64_t(1) << 31);
    } catch (const ropescope::io::IoError&) { }
    try {
        (void)ropescope::io::parseNpyHeader(bytes, int64_t(1) << 31);
    } catch (const ropescope::io::IoError&) { }
    return 0;
}

#pragma once
// The members of a ZIP archive held in memory (NumPy's .npz: np.savez stores them, np.savez_compressed
// deflates them). Every offset and size is checked against the archive before it is used, the inflated size
// must be what the directory says, and the total is capped: a hostile archive gives an IoError, never an
// out-of-bounds read or a zip bomb's gigabytes.
#include <QByteArray>
#include <QString>

#include <cstdint>
#include <utility>
#include <vector>

namespace ropescope::io {

// (name, bytes) of every member, in the central directory's order. Throws IoError (without a file name).
std::vector<std::pair<QString, QByteArray>> readZipMembers(const QByteArray& archive, int64_t maxTotalBytes);

} // namespace ropescope::io

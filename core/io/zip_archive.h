#pragma once
// The members of a ZIP archive held in memory (NumPy's .npz: np.savez stores them, np.savez_compressed
// deflates them; torch.save's archives store them). Every offset and size is checked against the archive
// before it is used, the inflated size must be what the directory says, and what is inflated is capped
// before inflating: a hostile archive gives an IoError, never an out-of-bounds read or a zip bomb's gigabytes.
#include <QByteArray>
#include <QString>

#include <cstdint>
#include <utility>
#include <vector>

namespace ropescope::io {

// One member as the central directory lists it, its data's place checked to lie inside the archive.
struct ZipMember {
    QString name;
    uint32_t method = 0;     // 0 stored, 8 deflate (others are refused by zipMemberBytes)
    uint32_t packedSize = 0; // bytes in the archive
    uint32_t size = 0;       // bytes once inflated: what the directory declares
    qsizetype dataAt = 0;    // where the packed bytes start
};
// Every member, in the central directory's order; nothing is inflated. Throws IoError (without a file name).
std::vector<ZipMember> listZipMembers(const QByteArray& archive);
// One member's bytes. A stored member is a view into `archive` (QByteArray::fromRawData: valid while `archive`
// is); a deflated one is inflated, and refused before inflating when it declares more than `maxInflated` bytes.
QByteArray zipMemberBytes(const QByteArray& archive, const ZipMember& member, int64_t maxInflated);
// The first min(`bytes`, size) bytes of a member, inflating no more (an .npy header, read before its data).
QByteArray zipMemberHead(const QByteArray& archive, const ZipMember& member, uint32_t bytes);

// (name, bytes) of every member, in the central directory's order, copied out; the declared sizes together
// at most `maxTotalBytes`. Throws IoError (without a file name).
std::vector<std::pair<QString, QByteArray>> readZipMembers(const QByteArray& archive, int64_t maxTotalBytes);

} // namespace ropescope::io

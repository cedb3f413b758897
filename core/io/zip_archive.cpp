#include "core/io/zip_archive.h"

#include "core/io/atomic_file.h"

#include <zlib.h>

#include <algorithm>

namespace ropescope::io {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;
constexpr int kMaxMembers = 4096;

uint32_t le(const QByteArray& b, qsizetype at, int bytes)
{
    if (at < 0 || at + bytes > b.size())
        throw IoError("not a ZIP archive: a record runs past the end");
    uint32_t v = 0;
    for (int k = 0; k < bytes; ++k)
        v |= static_cast<uint32_t>(static_cast<uint8_t>(b[at + k])) << (8 * k);
    return v;
}

QByteArray inflateRaw(const QByteArray& packed, uint32_t size)
{
    QByteArray out(static_cast<qsizetype>(size), Qt::Uninitialized);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
        throw IoError("zlib could not start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.constData()));
    z.avail_in = static_cast<uInt>(packed.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const uLong produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != size)
        throw IoError("a compressed member does not inflate to the size its directory gives");
    return out;
}

} // namespace

std::vector<ZipMember> listZipMembers(const QByteArray& archive)
{
    // The end-of-directory record: in the last 22 + 65535 bytes (a comment may follow it).
    qsizetype end = -1;
    for (qsizetype at = archive.size() - 22; at >= 0 && at >= archive.size() - 22 - 65535; --at)
        if (le(archive, at, 4) == kEndOfDirectory) {
            end = at;
            break;
        }
    if (end < 0)
        throw IoError("not a ZIP archive (no end-of-directory record)");
    const uint32_t members = le(archive, end + 10, 2), directorySize = le(archive, end + 12, 4), directoryAt = le(archive, end + 16, 4);
    if (members > kMaxMembers)
        throw IoError("the archive lists more than " + std::to_string(kMaxMembers) + " members");
    if (static_cast<int64_t>(directoryAt) + directorySize > end)
        throw IoError("the archive's directory lies outside it (ZIP64 archives are not read)");
    std::vector<ZipMember> out;
    qsizetype at = static_cast<qsizetype>(directoryAt);
    for (uint32_t m = 0; m < members; ++m) {
        if (le(archive, at, 4) != kDirectoryEntry)
            throw IoError("the archive's directory is damaged");
        ZipMember member;
        const uint32_t flags = le(archive, at + 8, 2);
        member.method = le(archive, at + 10, 2);
        member.packedSize = le(archive, at + 20, 4);
        member.size = le(archive, at + 24, 4);
        const uint32_t nameLength = le(archive, at + 28, 2), extraLength = le(archive, at + 30, 2), commentLength = le(archive, at + 32, 2);
        const uint32_t localAt = le(archive, at + 42, 4);
        if (at + 46 + nameLength > archive.size())
            throw IoError("the archive's directory is damaged");
        member.name = QString::fromUtf8(archive.mid(at + 46, nameLength));
        const std::string name = member.name.toStdString();
        at += 46 + nameLength + extraLength + commentLength;
        if (flags & 1)
            throw IoError("member '" + name + "' is encrypted");
        if (member.size == 0xffffffffu || member.packedSize == 0xffffffffu || localAt == 0xffffffffu)
            throw IoError("member '" + name + "' needs ZIP64, which is not read");
        if (le(archive, localAt, 4) != kLocalHeader)
            throw IoError("member '" + name + "' has no local header where the directory says");
        member.dataAt = static_cast<qsizetype>(localAt) + 30 + le(archive, localAt + 26, 2) + le(archive, localAt + 28, 2);
        if (member.dataAt + static_cast<qsizetype>(member.packedSize) > end)
            throw IoError("member '" + name + "' runs past the archive's data");
        if (member.method != 0 && member.method != 8)
            throw IoError("member '" + name + "' uses compression method " + std::to_string(member.method) +
                          " (stored and deflate are read)");
        if (member.method == 0 && member.packedSize != member.size)
            throw IoError("stored member '" + name + "' has two different sizes");
        out.push_back(std::move(member));
    }
    return out;
}

QByteArray zipMemberBytes(const QByteArray& archive, const ZipMember& member, int64_t maxInflated)
{
    if (member.method == 0)
        return QByteArray::fromRawData(archive.constData() + member.dataAt, static_cast<qsizetype>(member.size));
    if (static_cast<int64_t>(member.size) > maxInflated) // checked before a byte is inflated
        throw IoError("member '" + member.name.toStdString() + "' inflates to " + std::to_string(member.size) + " bytes, more than " +
                      std::to_string(maxInflated) + " are read");
    return inflateRaw(archive.mid(member.dataAt, member.packedSize), member.size);
}

QByteArray zipMemberHead(const QByteArray& archive, const ZipMember& member, uint32_t bytes)
{
    const uint32_t want = std::min(bytes, member.size);
    if (member.method == 0)
        return QByteArray::fromRawData(archive.constData() + member.dataAt, static_cast<qsizetype>(want));
    QByteArray out(static_cast<qsizetype>(want), Qt::Uninitialized);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
        throw IoError("zlib could not start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(archive.constData() + member.dataAt));
    z.avail_in = static_cast<uInt>(member.packedSize);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = Z_OK;
    while (z.avail_out > 0 && rc == Z_OK)
        rc = inflate(&z, Z_SYNC_FLUSH);
    const uLong produced = z.total_out;
    inflateEnd(&z);
    if (produced != want)
        throw IoError("member '" + member.name.toStdString() + "' does not inflate to the size its directory gives");
    return out;
}

std::vector<std::pair<QString, QByteArray>> readZipMembers(const QByteArray& archive, int64_t maxTotalBytes)
{
    std::vector<std::pair<QString, QByteArray>> out;
    int64_t total = 0;
    for (const ZipMember& member : listZipMembers(archive)) {
        total += member.size;
        if (total > maxTotalBytes)
            throw IoError("the archive inflates to more than " + std::to_string(maxTotalBytes >> 20) + " MiB");
        QByteArray bytes = zipMemberBytes(archive, member, maxTotalBytes);
        bytes.detach(); // a copy: the caller may outlive `archive`
        out.emplace_back(member.name, std::move(bytes));
    }
    return out;
}

} // namespace ropescope::io

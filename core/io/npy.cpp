#include "core/io/npy.h"

#include "core/io/atomic_file.h"

#include <QRegularExpression>
#include <QString>
#include <QStringList>

namespace ropescope::io {

NpyHeader parseNpyHeader(const QByteArray& bytes, long long maxDimension)
{
    if (bytes.size() < 10 || !bytes.startsWith("\x93NUMPY"))
        throw IoError("not a NumPy .npy file (no \\x93NUMPY magic)");
    const int major = static_cast<uint8_t>(bytes[6]);
    qint64 headerLength = 0, headerStart = 0;
    if (major == 1) {
        headerLength = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
        headerStart = 10;
    } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
        for (int k = 0; k < 4; ++k)
            headerLength |= static_cast<qint64>(static_cast<uint8_t>(bytes[8 + k])) << (8 * k);
        headerStart = 12;
    } else {
        throw IoError("NumPy format version " + std::to_string(major) + " is not supported");
    }
    if (headerLength > 65536 || headerStart + headerLength > bytes.size())
        throw IoError("the .npy header runs past the end of the file");
    const QString header = QString::fromLatin1(bytes.mid(headerStart, headerLength));
    const auto descr = QRegularExpression(R"('descr'\s*:\s*'([<>|=])([fiub])(\d+)')").match(header);
    const auto order = QRegularExpression(R"('fortran_order'\s*:\s*(True|False))").match(header);
    const auto shapeMatch = QRegularExpression(R"('shape'\s*:\s*\(([^)]*)\))").match(header);
    if (!descr.hasMatch() || !order.hasMatch() || !shapeMatch.hasMatch())
        throw IoError("the .npy header lacks descr, fortran_order or shape");
    if (descr.captured(1) == ">")
        throw IoError("big-endian arrays are not supported");
    if (order.captured(1) == "True")
        throw IoError("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
    NpyHeader h;
    for (const QString& part : shapeMatch.captured(1).split(',', Qt::SkipEmptyParts)) {
        bool ok = false;
        const long long v = part.trimmed().toLongLong(&ok);
        if (!ok || v < 0 || v > maxDimension)
            throw IoError("the .npy shape (" + shapeMatch.captured(1).toStdString() + ") is not a small array's");
        h.shape.push_back(v);
    }
    h.dtype = descr.captured(2).toStdString() + descr.captured(3).toStdString();
    h.dataOffset = headerStart + headerLength;
    return h;
}

} // namespace ropescope::io

#include "atomic_file.h"

#include <QSaveFile>

namespace ropescope::io {

void writeFileAtomically(const QString& path, const QByteArray& data)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        throw IoError(path.toStdString() + ": cannot write: " + file.errorString().toStdString());
    if (file.write(data) != data.size() || !file.commit())
        throw IoError(path.toStdString() + ": write failed: " + file.errorString().toStdString());
}

} // namespace ropescope::io

#pragma once
#include "core/io/atomic_file.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace ropescope::io {

// Reads a whole input file of at most `maxBytes`. Refuses what is not a regular file (a FIFO would block
// forever, /dev/zero would read until memory runs out) and files over the cap, with an IoError that names
// the path and says what `what` is (e.g. "job file").
QByteArray readInputFile(const QString& path, qint64 maxBytes, const char* what);

// readInputFile, then the bytes as one JSON object; IoError "PATH: not JSON (...)" otherwise.
QJsonObject readJsonObjectFile(const QString& path, qint64 maxBytes, const char* what);

// Throws IoError unless `path` is a regular file (for readers that open files themselves, e.g. images).
void requireRegularFile(const QString& path, const char* what);

} // namespace ropescope::io

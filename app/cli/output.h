#pragma once
#include <QByteArray>
#include <QString>

namespace ropescope::cli {

// Writes to `path` atomically, or to standard output when path is empty. Throws Failure on error.
void writeOutput(const QString& path, const QByteArray& data);

} // namespace ropescope::cli

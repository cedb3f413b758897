#pragma once
#include <QByteArray>
#include <QString>

namespace ropescope::cli {

// Writes to `path` atomically, or to standard output when path is empty. Throws Failure on error.
void writeOutput(const QString& path, const QByteArray& data);

// One CSV field holding free text (token text, answers, labels): always quoted, inner quotes doubled, so
// commas, quotes and line breaks in the text stay inside the field (RFC 4180).
QString csvField(QString text);

} // namespace ropescope::cli

#pragma once
#include <QByteArray>
#include <QString>

#include <string>

namespace ropescope::cli {

// Writes to `path` atomically, or to standard output when path is empty. Throws Failure on error.
void writeOutput(const QString& path, const QByteArray& data);

// One CSV field holding free text (token text, answers, labels): always quoted, inner quotes doubled, so
// commas, quotes and line breaks in the text stay inside the field (RFC 4180).
QString csvField(QString text);

// Text from outside (a question, a file name, a model's answer) made safe to print on a terminal: control
// characters become \xNN, so an escape sequence cannot recolour or rewrite the screen.
std::string terminalSafe(const std::string& text);

} // namespace ropescope::cli

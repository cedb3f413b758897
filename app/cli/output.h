#pragma once
#include <QByteArray>
#include <QString>

#include <string>

namespace ropescope::cli {

// Writes to `path` atomically, or to standard output when path is empty. Throws Failure on error.
void writeOutput(const QString& path, const QByteArray& data);

// Text from outside (a question, a file name, a model's answer) made safe to print on a terminal: control
// characters become \xNN, so an escape sequence cannot recolour or rewrite the screen.
std::string terminalSafe(const std::string& text);

} // namespace ropescope::cli

#pragma once
#include <QByteArray>
#include <QString>

#include <stdexcept>

namespace ropescope::io {

class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Writes through a temporary file renamed into place on success (QSaveFile), so a failure or a kill
// never leaves a partial file behind. Throws IoError naming the path and the reason.
void writeFileAtomically(const QString& path, const QByteArray& data);

} // namespace ropescope::io

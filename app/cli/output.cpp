#include "output.h"

#include "cli_error.h"
#include "io/atomic_file.h"

#include <cstdio>

namespace ropescope::cli {

void writeOutput(const QString& path, const QByteArray& data)
{
    if (path.isEmpty()) {
        if (std::fwrite(data.constData(), 1, static_cast<size_t>(data.size()), stdout) != static_cast<size_t>(data.size()))
            throw Failure("standard output: write failed");
        std::fflush(stdout);
        return;
    }
    try {
        io::writeFileAtomically(path, data);
    } catch (const io::IoError& e) {
        throw Failure(e.what());
    }
}

QString csvField(QString text)
{
    return '"' + text.replace('"', "\"\"") + '"';
}

} // namespace ropescope::cli

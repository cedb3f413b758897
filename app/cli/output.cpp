#include "app/cli/output.h"

#include "app/cli/cli_error.h"
#include "core/io/atomic_file.h"

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

std::string terminalSafe(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            out += escaped;
        } else {
            out += ch;
        }
    }
    return out;
}

} // namespace ropescope::cli

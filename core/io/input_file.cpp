#include "core/io/input_file.h"

#include <QJsonDocument>

#include <QFile>

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ropescope::io {
namespace {

[[noreturn]] void fail(const QString& path, const std::string& why)
{
    throw IoError(QFile::encodeName(path).toStdString() + ": " + why);
}

// Opens without blocking on a FIFO and checks that it is a regular file; returns the descriptor.
int openRegular(const QString& path, const char* what, struct stat& st)
{
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        fail(path, std::string("cannot read the ") + what + ": " + std::strerror(errno));
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, std::string("the ") + what + " is not a regular file");
    }
    return fd;
}

} // namespace

QByteArray readInputFile(const QString& path, qint64 maxBytes, const char* what)
{
    struct stat st { };
    const int fd = openRegular(path, what, st);
    if (st.st_size > maxBytes) {
        ::close(fd);
        fail(path, std::string("the ") + what + " is larger than " + std::to_string(maxBytes >> 20) + " MiB");
    }
    QByteArray data;
    data.resize(static_cast<qsizetype>(st.st_size));
    qint64 done = 0;
    while (done < st.st_size) {
        const ssize_t n = ::read(fd, data.data() + done, static_cast<size_t>(st.st_size - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int error = errno;
            ::close(fd);
            fail(path, std::string("cannot read the ") + what + ": " + std::strerror(error));
        }
        if (n == 0)
            break; // shrank while being read
        done += n;
    }
    ::close(fd);
    data.resize(static_cast<qsizetype>(done));
    return data;
}

void requireRegularFile(const QString& path, const char* what)
{
    struct stat st { };
    ::close(openRegular(path, what, st));
}

QJsonObject readJsonObjectFile(const QString& path, qint64 maxBytes, const char* what)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(readInputFile(path, maxBytes, what), &error);
    if (!doc.isObject())
        throw IoError(path.toStdString() + ": not JSON (" +
                      (doc.isNull() ? error.errorString().toStdString() : std::string("not an object")) + ")");
    return doc.object();
}

} // namespace ropescope::io

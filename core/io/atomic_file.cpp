#include "core/io/atomic_file.h"

#include <QDir>
#include <QFile>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ropescope::io {
namespace {

const char kTempPrefix[] = ".ropescope-tmp-";

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) { }
    ~Fd()
    {
        if (fd_ >= 0)
            ::close(fd_);
    }
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) { }
    Fd& operator=(Fd&& o) noexcept
    {
        std::swap(fd_, o.fd_);
        return *this;
    }
    int get() const { return fd_; }

private:
    int fd_;
};

[[noreturn]] void fail(const std::string& shown, const std::string& why)
{
    throw IoError(shown + ": " + why);
}

std::string encoded(const QString& s)
{
    return QFile::encodeName(s).toStdString();
}

std::string joined(const std::string& dir, const std::string& name)
{
    return dir.empty() || dir == "." ? name : dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Whether a file `name` in `dir` exists; throws unless it is a regular file, and reports its mode.
bool existingRegularFile(int dir, const std::string& name, const std::string& shown, mode_t* mode = nullptr)
{
    struct stat st { };
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return false;
        fail(shown, std::string("cannot inspect: ") + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
        fail(shown, "is a symbolic link; outputs are never written through links");
    if (!S_ISREG(st.st_mode))
        fail(shown, "exists and is not a regular file (a directory, device, FIFO or socket); refusing to replace it");
    if (mode)
        *mode = st.st_mode;
    return true;
}

// Temporary files of processes that no longer exist are leftovers of a kill: remove them, once per
// directory and process (a batch writes thousands of files into one folder).
void removeLeftoverTemps(int dir)
{
    struct stat st { };
    if (::fstat(dir, &st) != 0)
        return;
    static std::mutex mutex;
    static std::set<std::pair<dev_t, ino_t>> cleaned;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!cleaned.insert({st.st_dev, st.st_ino}).second)
            return;
    }
    const int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy < 0)
        return;
    DIR* listing = ::fdopendir(copy);
    if (!listing) {
        ::close(copy);
        return;
    }
    const size_t prefixLength = sizeof(kTempPrefix) - 1;
    while (const dirent* entry = ::readdir(listing)) {
        const char* name = entry->d_name;
        if (std::strncmp(name, kTempPrefix, prefixLength) != 0)
            continue;
        char* end = nullptr;
        const long pid = std::strtol(name + prefixLength, &end, 10);
        if (end == name + prefixLength || *end != '-' || pid <= 0 || pid == ::getpid())
            continue;
        if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
            continue; // its writer may still be running
        struct stat tmp { };
        if (::fstatat(dir, name, &tmp, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(tmp.st_mode))
            ::unlinkat(dir, name, 0);
    }
    ::closedir(listing);
}

void checkName(const std::string& name, const std::string& shown)
{
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
        fail(shown, "not a file name");
}

// Writes `data` to a new temporary file in `dir` and returns its name. The new file takes the mode of
// the file it will replace (or the default mode under the umask).
std::string writeTemp(int dir, const std::string& name, const QByteArray& data, const std::string& shown)
{
    checkName(name, shown);
    removeLeftoverTemps(dir);
    mode_t mode = 0;
    const bool replacing = existingRegularFile(dir, name, shown, &mode);
    static std::atomic<unsigned> counter{0};
    const std::string temp = kTempPrefix + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name.substr(0, 150);
    const int fd = ::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        fail(shown, std::string("cannot write: ") + std::strerror(errno));
    const char* p = data.constData();
    size_t left = static_cast<size_t>(data.size());
    int error = 0;
    if (replacing && ::fchmod(fd, mode & 07777) != 0)
        error = errno;
    while (left > 0 && error == 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            error = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    const int closed = ::close(fd);
    if (error == 0 && closed != 0)
        error = errno;
    if (error != 0) {
        ::unlinkat(dir, temp.c_str(), 0);
        fail(shown, std::string("write failed: ") + std::strerror(error));
    }
    return temp;
}

void renameInto(int dir, const std::string& temp, const std::string& name, const std::string& shown)
{
    try {
        existingRegularFile(dir, name, shown); // again: it may have changed while the data was written
    } catch (...) {
        ::unlinkat(dir, temp.c_str(), 0);
        throw;
    }
    if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
        const int error = errno;
        ::unlinkat(dir, temp.c_str(), 0);
        fail(shown, std::string("cannot write: ") + std::strerror(error));
    }
}

// `shown` names the file about to be written, so the message says what could not be written.
Fd openDirectory(const QString& path, const std::string& shown)
{
    const std::string p = encoded(path.isEmpty() ? QString(".") : path);
    Fd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0)
        fail(shown, "cannot write into the folder " + p + ": " + std::strerror(errno));
    return fd;
}

// The folder `name` inside `parent`, created if missing; never through a symbolic link.
Fd openChild(int parent, const std::string& name, const std::string& shown)
{
    if (::mkdirat(parent, name.c_str(), 0777) != 0 && errno != EEXIST)
        fail(shown, std::string("cannot create the folder: ") + std::strerror(errno));
    Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() >= 0)
        return fd;
    const int error = errno;
    struct stat st { };
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        fail(shown, "is a symbolic link; outputs never leave their output folder");
    if (error == ENOTDIR)
        fail(shown, "exists and is not a folder");
    fail(shown, std::string("cannot open the folder: ") + std::strerror(error));
}

} // namespace

void writeFileAtomically(const QString& path, const QByteArray& data)
{
    const QString clean = QDir::cleanPath(path);
    const qsizetype slash = clean.lastIndexOf('/');
    const QString dir = slash < 0 ? QString(".") : slash == 0 ? QString("/") : clean.left(slash);
    const std::string shown = encoded(path);
    const Fd fd = openDirectory(dir, shown);
    const std::string name = encoded(clean.mid(slash + 1));
    renameInto(fd.get(), writeTemp(fd.get(), name, data, shown), name, shown);
}

void writeFileInside(const QString& root, const QString& relative, const QByteArray& data)
{
    const std::string shownRoot = encoded(root);
    if (relative.isEmpty() || relative.startsWith('/'))
        fail(joined(shownRoot, encoded(relative)), "must be a relative path inside the output folder");
    QStringList parts;
    for (const QString& part : relative.split('/', Qt::SkipEmptyParts)) {
        if (part == "..")
            fail(joined(shownRoot, encoded(relative)), "'..' would leave the output folder");
        if (part != ".")
            parts << part;
    }
    if (parts.isEmpty())
        fail(joined(shownRoot, encoded(relative)), "not a file name");
    Fd dir = openDirectory(root, joined(shownRoot, encoded(relative)));
    std::string shown = shownRoot;
    for (int i = 0; i + 1 < parts.size(); ++i) {
        const std::string part = encoded(parts[i]);
        shown = joined(shown, part);
        dir = openChild(dir.get(), part, shown);
    }
    const std::string name = encoded(parts.last());
    shown = joined(shown, name);
    renameInto(dir.get(), writeTemp(dir.get(), name, data, shown), name, shown);
}

struct StagedFiles::State {
    Fd dir;
    std::string shownDir;
    std::vector<std::pair<std::string, std::string>> staged; // temporary name, final name
};

StagedFiles::StagedFiles(const QString& dir) : state_(std::make_unique<State>())
{
    state_->shownDir = encoded(dir);
    state_->dir = openDirectory(dir, state_->shownDir);
}

StagedFiles::~StagedFiles()
{
    for (const auto& [temp, name] : state_->staged)
        ::unlinkat(state_->dir.get(), temp.c_str(), 0);
}

void StagedFiles::stage(const QString& name, const QByteArray& data)
{
    const std::string n = encoded(name);
    const std::string shown = joined(state_->shownDir, n);
    state_->staged.emplace_back(writeTemp(state_->dir.get(), n, data, shown), n);
}

void StagedFiles::removeStale(const QString& name)
{
    const std::string n = encoded(name);
    const std::string shown = joined(state_->shownDir, n);
    checkName(n, shown);
    struct stat st { };
    if (::fstatat(state_->dir.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        ::unlinkat(state_->dir.get(), n.c_str(), 0) != 0)
        fail(shown, std::string("cannot remove the output of an earlier run: ") + std::strerror(errno));
}

void StagedFiles::commit()
{
    // Check every target before renaming any, so that a refused one leaves all targets as they were.
    for (const auto& [temp, name] : state_->staged)
        existingRegularFile(state_->dir.get(), name, joined(state_->shownDir, name));
    while (!state_->staged.empty()) {
        const auto [temp, name] = state_->staged.front();
        state_->staged.erase(state_->staged.begin());
        renameInto(state_->dir.get(), temp, name, joined(state_->shownDir, name));
    }
}

} // namespace ropescope::io

#include "core/user_schemes/scheme_worker.h"

#include "core/user_schemes/worker_wire.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

extern char** environ;

namespace ropescope::user_schemes {
namespace {

using Clock = wire::Clock;

// A worker that does not say it is ready in this long (interpreter and numpy) is given up on.
constexpr std::chrono::seconds kStartLimit{20};
// How long after its own limit a call's worker is killed: the cooperative interruption reports file:line
// well inside this; code that cannot be interrupted is ended here.
constexpr std::chrono::milliseconds kGrace{300};
constexpr off_t kMaxCapture = 4 << 20; // RLIMIT_FSIZE: a scheme printing without end gets EFBIG, not a full disk

// Every live worker's process group, ended when RopeScope exits normally (a worker also ends itself when
// RopeScope is gone: worker_main.cpp watches its parent).
std::mutex liveMutex;
std::set<pid_t>& liveGroups()
{
    static auto* groups = new std::set<pid_t>; // leaked: used from atexit, after static destructors
    return *groups;
}

void endAllWorkers()
{
    std::lock_guard<std::mutex> lock(liveMutex);
    for (pid_t group : liveGroups())
        kill(-group, SIGKILL);
}

std::string workerExecutable()
{
    if (const char* env = std::getenv("ROPESCOPE_SCHEME_WORKER"); env && *env)
        return env;
    std::vector<char> self(4096);
    const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    std::string dir = n > 0 ? std::string(self.data(), static_cast<std::size_t>(n)) : std::string();
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    return dir + "ropescope-scheme-worker";
}

std::string seconds(std::chrono::milliseconds ms)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", static_cast<double>(ms.count()) / 1000.0);
    return text;
}

// The worker's environment: only what Python needs, never PYTHONPATH or PYTHONSTARTUP (isolated mode
// ignores them anyway), and one BLAS thread (numpy's pool would otherwise reserve address space per core).
std::vector<std::string> workerEnvironment()
{
    std::vector<std::string> env{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1"};
    for (const char* keep : {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"})
        if (const char* v = std::getenv(keep))
            env.push_back(std::string(keep) + "=" + v);
    return env;
}

std::string describeEnd(int status)
{
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* name = strsignal(sig);
        return "signal " + std::to_string(sig) + (name ? std::string(", ") + name : std::string());
    }
    if (WIFEXITED(status))
        return "exit code " + std::to_string(WEXITSTATUS(status));
    return "status " + std::to_string(status);
}

} // namespace

std::chrono::milliseconds callTimeLimit()
{
    if (const char* env = std::getenv("ROPESCOPE_PYTHON_TIME_LIMIT_MS"))
        if (const long ms = std::strtol(env, nullptr, 10); ms > 0)
            return std::chrono::milliseconds(ms);
    return std::chrono::milliseconds(2000);
}

std::uint64_t workerMemoryLimit()
{
    std::uint64_t mb = 2048;
    if (const char* env = std::getenv("ROPESCOPE_PYTHON_MEMORY_MB"))
        mb = std::strtoull(env, nullptr, 10);
    return mb << 20;
}

SchemeWorker::SchemeWorker(std::string label) : label_(std::move(label)) { }

SchemeWorker::~SchemeWorker()
{
    stop();
    if (capture_ >= 0)
        close(capture_);
}

void SchemeWorker::start()
{
    static const bool atExitSet = [] { return std::atexit(endAllWorkers) == 0; }();
    (void)atExitSet;
    const std::string exe = workerExecutable();
    if (access(exe.c_str(), X_OK) != 0)
        throw WorkerFailure(label_ + ": cannot run Python schemes: the worker " + exe + " is missing (" + std::strerror(errno) + ")");
    if (capture_ < 0) {
        capture_ = memfd_create("ropescope-scheme-output", MFD_CLOEXEC);
        if (capture_ < 0)
            throw WorkerFailure(label_ + ": cannot start the Python worker (memfd: " + std::strerror(errno) + ")");
        fcntl(capture_, F_SETFL, fcntl(capture_, F_GETFL) | O_APPEND); // writes land at the end after a truncate
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw WorkerFailure(label_ + ": cannot start the Python worker (socketpair: " + std::strerror(errno) + ")");
    const int devNull = open("/dev/null", O_RDONLY | O_CLOEXEC);

    // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe calls.
    const std::string limitText = std::to_string(callTimeLimit().count());
    const std::string parentText = std::to_string(getpid());
    std::vector<char*> argv{const_cast<char*>(exe.c_str()), const_cast<char*>(limitText.c_str()), const_cast<char*>(parentText.c_str()),
                            nullptr};
    const std::vector<std::string> envStrings = workerEnvironment();
    std::vector<char*> envp;
    for (const std::string& e : envStrings)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const std::uint64_t memory = workerMemoryLimit();
    const int capture = capture_, child = sv[1];

    const pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        if (devNull >= 0)
            close(devNull);
        throw WorkerFailure(label_ + ": cannot start the Python worker (fork: " + std::strerror(errno) + ")");
    }
    if (pid == 0) {
        setpgid(0, 0); // its own group: a kill of the group ends whatever the scheme started
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        signal(SIGXFSZ, SIG_IGN); // over the capture limit: EFBIG for the writer, not death
        signal(SIGPIPE, SIG_DFL);
        dup2(devNull >= 0 ? devNull : 0, 0);
        dup2(capture, 1);
        dup2(capture, 2);
        if (child == 3)
            fcntl(3, F_SETFD, 0);
        else
            dup2(child, 3);
#ifdef SYS_close_range
        syscall(SYS_close_range, 4u, ~0u, 0u);
#else
        for (int fd = 4; fd < 4096; ++fd)
            close(fd);
#endif
        rlimit core{0, 0};
        setrlimit(RLIMIT_CORE, &core);
        rlimit fsize{static_cast<rlim_t>(kMaxCapture), static_cast<rlim_t>(kMaxCapture)};
        setrlimit(RLIMIT_FSIZE, &fsize);
#if !defined(__SANITIZE_ADDRESS__) // AddressSanitizer reserves terabytes of address space up front
        if (memory > 0) {
            rlimit as{static_cast<rlim_t>(memory), static_cast<rlim_t>(memory)};
            setrlimit(RLIMIT_AS, &as);
        }
#endif
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    setpgid(pid, pid); // also from this side: no window in which a kill of the group misses it
    close(sv[1]);
    if (devNull >= 0)
        close(devNull);
    pid_ = pid;
    socket_ = sv[0];
    {
        std::lock_guard<std::mutex> lock(liveMutex);
        liveGroups().insert(pid);
    }
    std::uint32_t kind = 0;
    std::string payload;
    bool ready = false;
    try {
        ready = wire::receiveFrame(socket_, &kind, &payload, Clock::now() + kStartLimit);
    } catch (const wire::WireError&) { }
    if (!ready || kind != static_cast<std::uint32_t>(wire::Kind::Ready)) {
        const std::string printed = output(300);
        stop();
        throw WorkerFailure(label_ + ": the Python worker did not start" +
                            (printed.empty() ? std::string() : " (it printed: " + printed + ")"));
    }
}

void SchemeWorker::stop()
{
    reap();
}

int SchemeWorker::reap()
{
    if (pid_ <= 0)
        return 0;
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) { }
    kill(-pid_, SIGKILL); // what the scheme forked, now that its leader is gone
    {
        std::lock_guard<std::mutex> lock(liveMutex);
        liveGroups().erase(pid_);
    }
    close(socket_);
    socket_ = -1;
    pid_ = -1;
    return status;
}

std::string SchemeWorker::output(std::size_t maxBytes) const
{
    if (capture_ < 0)
        return {};
    struct stat st;
    if (fstat(capture_, &st) != 0 || st.st_size <= 0)
        return {};
    const off_t size = std::min<off_t>(st.st_size, kMaxCapture);
    const off_t from = size > static_cast<off_t>(maxBytes) ? size - static_cast<off_t>(maxBytes) : 0;
    std::string text(static_cast<std::size_t>(size - from), '\0');
    const ssize_t n = pread(capture_, text.data(), text.size(), from);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

void SchemeWorker::fail(const std::string& reason)
{
    throw WorkerFailure(label_ + ": " + reason);
}

SchemeWorker::Reply SchemeWorker::call(std::uint32_t kind, const std::string& payload, const char* what)
{
    if (!running())
        start();
    if (capture_ >= 0 && ftruncate(capture_, 0) != 0) { }
    const std::chrono::milliseconds limit = callTimeLimit();
    const Clock::time_point deadline = Clock::now() + limit + kGrace;
    std::uint32_t status = 0;
    std::string reply;
    bool inTime = false;
    try {
        inTime = wire::sendFrame(socket_, kind, payload, deadline) && wire::receiveFrame(socket_, &status, &reply, deadline);
    } catch (const wire::WireError& e) {
        // The worker is gone (or sent an impossible frame): say how it ended. A worker that died on its own
        // has its status from before the kill in reap().
        const bool closed = std::string(e.what()).find("closed") != std::string::npos; // it ended on its own
        const int end = reap();
        fail(std::string(what) + ": the scheme's process " +
             (closed ? "ended (" + describeEnd(end) + ")" : std::string("sent a malformed message: ") + e.what()));
    }
    if (!inTime) {
        stop();
        fail(std::string(what) + " ran longer than " + seconds(limit) + " s and was stopped (its process was ended)");
    }
    if (status != static_cast<std::uint32_t>(wire::Status::Ok) && status != static_cast<std::uint32_t>(wire::Status::Error)) {
        stop();
        fail(std::string(what) + ": the scheme's process sent a malformed reply");
    }
    return {status == static_cast<std::uint32_t>(wire::Status::Ok), std::move(reply)};
}

} // namespace ropescope::user_schemes

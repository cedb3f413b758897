#pragma once
// RopeScope's side of a Python scheme's worker process (ropescope-scheme-worker, worker_main.cpp). One
// worker per loaded scheme file, started on first use and again after it was ended. The worker runs in its
// own process group under a memory limit (RLIMIT_AS), with its stdout and stderr captured; a call that
// overruns its time, or a worker that crashes or answers nonsense, ends the whole group and becomes one
// WorkerFailure line. Everything the worker sends back is checked by the caller (python_scheme.cpp).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ropescope::user_schemes {

// The worker did not answer in time, ended, or broke the protocol: what() is one line naming the file.
class WorkerFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The longest a call into user code may run (2 s; ROPESCOPE_PYTHON_TIME_LIMIT_MS for tests).
std::chrono::milliseconds callTimeLimit();
// The worker's address-space limit in bytes (2 GiB; ROPESCOPE_PYTHON_MEMORY_MB to change it; 0: none).
std::uint64_t workerMemoryLimit();

class SchemeWorker {
public:
    // `label` names the scheme in messages (its file name).
    explicit SchemeWorker(std::string label);
    ~SchemeWorker();
    SchemeWorker(const SchemeWorker&) = delete;
    SchemeWorker& operator=(const SchemeWorker&) = delete;

    struct Reply {
        bool ok = false; // false: the worker reported an error (payload: its line and detail)
        std::string payload;
    };
    // Sends one request and waits for its reply. The worker's own cooperative limit interrupts Python code
    // at callTimeLimit(); the worker is killed at that limit plus a grace period (code that cannot be
    // interrupted). `what` names the call in messages ("positions()").
    Reply call(std::uint32_t kind, const std::string& payload, const char* what);

    bool running() const { return pid_ > 0; }
    // Ends the worker and everything it started (its process group). Safe to call when not running.
    void stop();
    // What the scheme printed (stdout and stderr) since the last call began, at most the last `maxBytes`.
    std::string output(std::size_t maxBytes = 2000) const;

private:
    void start();
    int reap(); // kills the group, waits for the worker; its wait status (0 when none was running)
    [[noreturn]] void fail(const std::string& reason);

    std::string label_;
    pid_t pid_ = -1;
    int socket_ = -1;
    int capture_ = -1; // memfd holding the worker's stdout and stderr
};

} // namespace ropescope::user_schemes

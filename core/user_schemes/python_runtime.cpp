#include "core/user_schemes/python_runtime.h"

#include "scheme_runtime_source.h" // generated from scheme_runtime.py (core/user_schemes/CMakeLists.txt)

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace ropescope::user_schemes {

void startPython()
{
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0; // SIGTERM and SIGINT end the worker; RopeScope owns them
    config.write_bytecode = 0;
    config.buffered_stdio = 0; // what a scheme prints is in the capture file even if it then crashes
    config.parse_argv = 0;
    py::initialize_interpreter(&config, 0, nullptr, false);
    // Isolated mode already leaves out the working folder; a scheme's own folder is never added either, so
    // an `import` cannot pick up a file beside the scheme that trust did not cover.
    py::exec("import sys, os\n"
             "sys.path[:] = [p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) != os.path.realpath(os.getcwd())]\n");
#ifdef ROPESCOPE_NUMPY_SITE
    // numpy's folder as the build found it, should the interpreter's own site search have missed it.
    py::module_::import("sys").attr("path").attr("append")(ROPESCOPE_NUMPY_SITE);
    py::exec("import sys\nseen = set()\nsys.path[:] = [p for p in sys.path if not (p in seen or seen.add(p))]\ndel seen\n");
#endif
    schemeRuntime();
}

py::module_& schemeRuntime()
{
    static py::module_* runtime = [] {
        py::module_ m = py::module_::import("types").attr("ModuleType")("ropescope_scheme_runtime");
        m.attr("__file__") = "<ropescope scheme_runtime.py>";
        py::exec(kSchemeRuntimeSource, m.attr("__dict__"));
        py::module_::import("sys").attr("modules")["ropescope_scheme_runtime"] = m;
        return new py::module_(m);
    }();
    return *runtime;
}

// One watchdog thread for the worker's life (a thread per call cost a scheduler tick per call; docs/SPEED.md, "A Python scheme in the live view").
// A call arms it with a deadline and a generation; past the deadline it raises SchemeTimeout into the main
// thread, every 100 ms until the call disarms it. The generation keeps a late interruption out of the next call.
namespace {

struct Watchdog {
    std::mutex mutex;
    std::condition_variable changed;
    unsigned long thread = 0;
    PyObject* timeout = nullptr;
    bool armed = false;
    unsigned long long generation = 0;
    std::chrono::steady_clock::time_point deadline;

    void run()
    {
        std::unique_lock<std::mutex> lock(mutex);
        for (;;) {
            changed.wait(lock, [this] { return armed; });
            const unsigned long long mine = generation;
            if (changed.wait_until(lock, deadline, [&] { return !armed || generation != mine; }))
                continue;
            while (armed && generation == mine) {
                lock.unlock();
                {
                    PyGILState_STATE gil = PyGILState_Ensure();
                    {
                        std::lock_guard<std::mutex> check(mutex);
                        // CPython raises async exceptions as a class, not an instance.
                        if (armed && generation == mine)
                            PyThreadState_SetAsyncExc(thread, timeout);
                    }
                    PyGILState_Release(gil);
                }
                lock.lock();
                changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return !armed || generation != mine; });
            }
        }
    }
};

Watchdog& watchdog()
{
    static Watchdog* w = [] {
        auto* dog = new Watchdog; // lives as long as the worker
        dog->thread = PyThread_get_thread_ident();
        dog->timeout = schemeRuntime().attr("SchemeTimeout").ptr();
        Py_INCREF(dog->timeout);
        std::thread([dog] { dog->run(); }).detach();
        return dog;
    }();
    return *w;
}

} // namespace

CallDeadline::CallDeadline(std::chrono::milliseconds limit) : pid_(getpid())
{
    schemeRuntime().attr("time_limit") = std::chrono::duration<double>(limit).count();
    Watchdog& w = watchdog();
    {
        std::lock_guard<std::mutex> lock(w.mutex);
        w.armed = true;
        ++w.generation;
        w.deadline = std::chrono::steady_clock::now() + limit;
    }
    w.changed.notify_all();
}

CallDeadline::~CallDeadline()
{
    // A scheme that called os.fork() returns here in the child too, where the watchdog thread does not
    // exist: the child ends now and never answers RopeScope.
    if (getpid() != pid_)
        _exit(0);
    Watchdog& w = watchdog();
    {
        std::lock_guard<std::mutex> lock(w.mutex);
        w.armed = false;
    }
    w.changed.notify_all();
    PyThreadState_SetAsyncExc(w.thread, nullptr); // one that arrived after the call returned
}

} // namespace ropescope::user_schemes

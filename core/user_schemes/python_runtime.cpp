#include "core/user_schemes/python_runtime.h"

#include "scheme_runtime_source.h" // generated from scheme_runtime.py (core/user_schemes/CMakeLists.txt)

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace ropescope::user_schemes {
namespace {

std::once_flag started;
std::mutex interpreter;

void start()
{
    // No signal handlers of Python's own: Ctrl+C stays the application's. The GIL is released at once so
    // that whichever thread calls next can take it.
    py::initialize_interpreter(false);
    PyEval_SaveThread();
}

} // namespace

void withPython(const std::function<void()>& work)
{
    std::call_once(started, start);
    std::lock_guard<std::mutex> lock(interpreter);
    py::gil_scoped_acquire gil;
    work();
}

py::module_& schemeRuntime()
{
    // Leaked on purpose: the interpreter is never finalised, so the module must outlive static destructors.
    static py::module_* runtime = [] {
        py::module_ m = py::module_::import("types").attr("ModuleType")("ropescope_scheme_runtime");
        m.attr("__file__") = "<ropescope scheme_runtime.py>";
        py::exec(kSchemeRuntimeSource, m.attr("__dict__"));
        py::module_::import("sys").attr("modules")["ropescope_scheme_runtime"] = m;
        return new py::module_(m);
    }();
    return *runtime;
}

std::chrono::milliseconds callTimeLimit()
{
    // ROPESCOPE_PYTHON_TIME_LIMIT_MS exists for tests of the interruption; users get the 2 s the design names.
    if (const char* env = std::getenv("ROPESCOPE_PYTHON_TIME_LIMIT_MS"))
        if (const long ms = std::strtol(env, nullptr, 10); ms > 0)
            return std::chrono::milliseconds(ms);
    return std::chrono::milliseconds(2000);
}

struct CallDeadline::State {
    unsigned long thread = 0;
    PyObject* timeout = nullptr;
    std::chrono::milliseconds limit{0};
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    bool fired = false;
    std::thread watchdog;
};

CallDeadline::CallDeadline(std::chrono::milliseconds limit) : state_(new State)
{
    state_->thread = PyThread_get_thread_ident();
    state_->limit = limit;
    py::module_& runtime = schemeRuntime();
    runtime.attr("time_limit") = std::chrono::duration<double>(limit).count();
    py::object timeoutType = runtime.attr("SchemeTimeout");
    state_->timeout = timeoutType.ptr();
    Py_INCREF(state_->timeout);
    State* s = state_;
    s->watchdog = std::thread([s] {
        std::unique_lock<std::mutex> lock(s->mutex);
        if (s->done.wait_for(lock, s->limit, [s] { return s->finished; }))
            return;
        while (!s->finished) {
            s->fired = true;
            lock.unlock();
            {
                // The exception type (CPython raises async exceptions as a class, not an instance).
                PyGILState_STATE gil = PyGILState_Ensure();
                PyThreadState_SetAsyncExc(s->thread, s->timeout);
                PyGILState_Release(gil);
            }
            lock.lock();
            s->done.wait_for(lock, std::chrono::milliseconds(100), [s] { return s->finished; });
        }
    });
}

CallDeadline::~CallDeadline()
{
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->finished = true;
    }
    state_->done.notify_all();
    {
        // The watchdog may be waiting for the GIL this thread holds.
        py::gil_scoped_release release;
        state_->watchdog.join();
    }
    if (state_->fired)
        PyThreadState_SetAsyncExc(state_->thread, nullptr); // one that arrived after the call returned
    Py_DECREF(state_->timeout);
    delete state_;
}

} // namespace ropescope::user_schemes

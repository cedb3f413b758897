#pragma once
// Inside the worker process only (worker_main.cpp): the embedded CPython interpreter and the cooperative
// time limit. A call into user code is interrupted with scheme_runtime.SchemeTimeout once its time has
// passed, so code that can be interrupted reports its file:line; code that cannot (a C call, a sleep, a
// thread holding the GIL) is ended from outside by RopeScope, which kills the worker a little later.
#include <pybind11/embed.h>

#include <chrono>

namespace ropescope::user_schemes {

namespace py = pybind11;

// Starts the interpreter in isolated mode (no PYTHON* variables, no user site, no script folder) and
// imports the runtime module; sys.path keeps only the standard library and the system's packages.
void startPython();

// The module core/user_schemes/scheme_runtime.py.
py::module_& schemeRuntime();

// Interrupts the main thread's Python code with scheme_runtime.SchemeTimeout once `limit` has passed, and
// again every 100 ms until the scope ends. Construct on the main thread, holding the GIL.
class CallDeadline {
public:
    explicit CallDeadline(std::chrono::milliseconds limit);
    ~CallDeadline();
    CallDeadline(const CallDeadline&) = delete;
    CallDeadline& operator=(const CallDeadline&) = delete;

private:
    int pid_;
};

} // namespace ropescope::user_schemes

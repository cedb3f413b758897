#pragma once
// The embedded CPython interpreter (pybind11): started once, on first use, from any thread; every call
// into Python takes the interpreter through withPython, so the explorer's worker, the GUI thread and the
// model's runner can all call schemes. Included only by core/user_schemes's own sources.
#include <pybind11/embed.h>

#include <chrono>
#include <functional>
#include <string>

namespace ropescope::user_schemes {

namespace py = pybind11;

// Runs `work` holding the interpreter (its lock and the GIL). Calls are serialised: one interpreter.
void withPython(const std::function<void()>& work);

// The module core/user_schemes/scheme_runtime.py, imported once (call while holding the interpreter).
py::module_& schemeRuntime();

// The longest a call into user code may run before it is interrupted (SchemeTimeout raised in it).
std::chrono::milliseconds callTimeLimit();

// Interrupts the calling thread's Python code with scheme_runtime.SchemeTimeout once `limit` has passed,
// and keeps interrupting it every 100 ms until the scope ends (code that catches everything is interrupted
// again). Construct while holding the interpreter; the destructor waits for the watchdog and clears an
// interruption that arrived after the call returned.
class CallDeadline {
public:
    explicit CallDeadline(std::chrono::milliseconds limit = callTimeLimit());
    ~CallDeadline();
    CallDeadline(const CallDeadline&) = delete;
    CallDeadline& operator=(const CallDeadline&) = delete;

private:
    struct State;
    State* state_;
};

} // namespace ropescope::user_schemes

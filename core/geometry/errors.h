#pragma once
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ropescope::geometry {

// Bad input from a user (layout text, scheme parameters): one line that says what is wrong and why.
// A problem with one parameter names it as session files and job items spell it ("alpha", "head_dim",
// "layout"; what() is "<parameter>: <reason>"); the CLI says the flag instead, the GUI the control.
class InvalidInput : public std::invalid_argument {
public:
    explicit InvalidInput(const std::string& message) : std::invalid_argument(message), reason_(message) { }
    InvalidInput(const std::string& parameter, const std::string& reason)
        : std::invalid_argument(parameter + ": " + reason), parameter_(parameter), reason_(reason)
    { }
    const std::string& parameter() const { return parameter_; } // empty when the message names no parameter
    const std::string& reason() const { return reason_; }

private:
    std::string parameter_, reason_;
};

// A number as an error message shows it: the shortest text that reads back as the same double
// (1.0000001, not 1.000000; 1e+40, not forty digits).
inline std::string shortNumber(double v)
{
    char text[32];
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, v);
        if (std::strtod(text, nullptr) == v)
            break;
    }
    return text;
}

} // namespace ropescope::geometry

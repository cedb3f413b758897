#pragma once
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ropescope::geometry {

// Bad input from a user (layout text, scheme parameters). The message is one line that names the
// offending argument and says why, so the CLI and GUI can show it as is.
class InvalidInput : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
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

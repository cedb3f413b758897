#pragma once
#include <stdexcept>

namespace ropescope::geometry {

// Bad input from a user (layout text, scheme parameters). The message is one line that names the
// offending argument and says why, so the CLI and GUI can show it as is.
class InvalidInput : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

} // namespace ropescope::geometry

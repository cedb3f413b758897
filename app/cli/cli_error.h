#pragma once
#include <stdexcept>

namespace ropescope::cli {

// A bad command line (unknown flag, bad value, bad layout): exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A valid request that could not be carried out (unwritable output, ...): exit code 1.
class Failure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown after a command printed its --help text: exit code 0.
struct HelpShown { };

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

} // namespace ropescope::cli

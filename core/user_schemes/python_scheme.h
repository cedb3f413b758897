#pragma once
// Python schemes: a plain .py file defining positions(layout, **params) -> [C, L], optionally PARAMETERS,
// COMPONENTS and allocation(head_dim), run in the embedded interpreter (README "Your own scheme").
// No Python or pybind11 header here: the CLI, the GUI and batch include this.
#include "core/geometry/custom_scheme.h"
#include "core/geometry/errors.h"

#include <memory>
#include <string>

namespace ropescope::user_schemes {

// A scheme file's failure: what() is one line ("scheme: my.py:12: ZeroDivisionError: division by zero"),
// detail() the traceback's last lines for the window.
class PythonError : public geometry::InvalidInput {
public:
    PythonError(const std::string& line, std::string detail) : InvalidInput("scheme", line), detail_(std::move(detail)) {}
    const std::string& detail() const { return detail_; }

private:
    std::string detail_;
};

// Whether --scheme names a Python file rather than a built-in.
bool isPythonSchemePath(const std::string& scheme);

// The SHA-256 of a scheme file as sessions record it (hex); throws io::IoError for an unreadable file.
std::string schemeFileSha256(const std::string& path);

// Runs the file (at most 1 MB) and checks its declarations; the first positions() call on a small layout
// fixes its component count. Throws PythonError (the file's error, file:line), io::IoError (unreadable).
// The file's code runs: call it only for a file the user named or trusted.
std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const std::string& path);

// The reference a SchemeParams holds for a loaded scheme with these values.
geometry::CustomSchemeRef pythonSchemeRef(std::shared_ptr<const geometry::CustomScheme> scheme, geometry::CustomValues values = {});

} // namespace ropescope::user_schemes

#pragma once
// Python schemes: a plain .py file defining positions(layout, **params) -> [C, L], optionally PARAMETERS,
// COMPONENTS and allocation(head_dim), run in a worker process of its own (scheme_worker.h,
// docs/USER_SCHEMES.md). No Python here: the CLI, the GUI and batch include this.
#include "core/geometry/custom_scheme.h"
#include "core/geometry/errors.h"

#include <QByteArray>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ropescope::user_schemes {

// A scheme file's failure: what() is one line ("scheme: my.py:12: ZeroDivisionError: division by zero"),
// detail() the traceback's last lines for the window.
class PythonError : public geometry::InvalidInput {
public:
    PythonError(const std::string& line, std::string detail) : InvalidInput("scheme", line), detail_(std::move(detail)) { }
    const std::string& detail() const { return detail_; }

private:
    std::string detail_;
};

// Whether --scheme names a Python file rather than a built-in.
bool isPythonSchemePath(const std::string& scheme);

// A scheme file read once (at most 1 MB): its bytes and their SHA-256 (hex), as sessions record it. Trust is
// decided on `sha256`, and `bytes` are what runs: the file is never read a second time in between.
struct SchemeSource {
    std::string path;
    QByteArray bytes;
    std::string sha256; // of `bytes` alone; with modules, of the file and every module (name, size, bytes)
    // The .py files beside it (module name -> bytes) when the user lets the scheme import its folder:
    // served to `import` from these bytes, never read from disk again.
    std::vector<std::pair<std::string, QByteArray>> modules;
    bool importsFolder = false;
};
// Throws io::IoError for an unreadable or oversized file (or folder: at most 64 modules, 4 MB in all).
SchemeSource readSchemeSource(const std::string& path, bool importsFolder = false);
std::string schemeFileSha256(const std::string& path);

// Runs the source in a new worker process and checks its declarations; the first positions() call on a
// small layout fixes its component count. Throws PythonError (the file's error, file:line; a call over its
// time; a worker that crashed). The code runs: call it only for a file the user named or trusted.
std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const SchemeSource& source);
// The same for a file the user named on this command line (read, then run, once).
std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const std::string& path, bool importsFolder = false);

// From now on every loadPythonScheme in this process is refused with "<file>: <why>" and runs nothing (a
// batch job without --trust-python: whatever item or flag names a .py file, this one gate stops it).
void refusePythonSchemes(const std::string& why);

// The reference a SchemeParams holds for a loaded scheme with these values.
geometry::CustomSchemeRef pythonSchemeRef(std::shared_ptr<const geometry::CustomScheme> scheme, geometry::CustomValues values = {});

} // namespace ropescope::user_schemes

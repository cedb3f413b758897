#pragma once
#include <QByteArray>
#include <QString>

#include <memory>
#include <stdexcept>

namespace ropescope::io {

class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Every output is written to a temporary file in its own directory and renamed into place, so a failure
// or a kill never leaves a partial file behind. Only a regular file (or a new name) is ever replaced: a
// device node, FIFO, directory or symbolic link at the target is refused, never written through or
// renamed over. Temporary files are named ".ropescope-tmp-<pid>-..."; those left by a killed process are
// removed the next time anything is written into that directory. Errors throw IoError naming the path.

// Writes `path`; folders named in `path` (symbolic links among them) are the caller's choice.
void writeFileAtomically(const QString& path, const QByteArray& data);

// Writes `relative` (plain components, no "..", no absolute path) below `root`, creating missing
// folders. No component may be a symbolic link: outputs never leave `root`.
void writeFileInside(const QString& root, const QString& relative, const QByteArray& data);

// A set of files in one folder that appear together: stage() writes each to a temporary file, commit()
// renames them all into place. If staging any of them fails, or commit() is never reached, none of them
// replaces anything (the temporary files are removed).
class StagedFiles {
public:
    explicit StagedFiles(const QString& dir);
    ~StagedFiles();
    StagedFiles(const StagedFiles&) = delete;
    StagedFiles& operator=(const StagedFiles&) = delete;

    void stage(const QString& name, const QByteArray& data);
    // Removes a regular file `name` left from an earlier run (nothing if absent); not a non-regular one.
    void removeStale(const QString& name);
    void commit();

private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace ropescope::io

#pragma once
#include "core/session/explorer_state.h"

#include <QJsonObject>
#include <QString>

#include <optional>
#include <stdexcept>
#include <string>

namespace ropescope::session {

// A session file (.ropescope.json): the explorer's state, plus the Attention tab's settings, which the GUI
// owns and this layer keeps as they are.
struct SessionFile {
    ExplorerState state;
    QJsonObject attention;
};

// A session file that cannot be used: unreadable, not JSON, or a value that cannot be drawn. what() is
// "<path>: <detail>"; for a bad value, `parameter` names it and detail is the reason alone (the GUI says
// the control instead).
class SessionFileError : public std::runtime_error {
public:
    SessionFileError(const QString& path, const std::string& detail, const std::string& parameter = {});
    QString path;
    std::string detail;
    std::string parameter; // the parameter a bad value belongs to (geometry::InvalidInput's), else empty
};

// Reads and validates a whole session (at most 16 MiB; only regular files, so a FIFO cannot block). An
// image path that is not a regular file is dropped: a missing image is not fatal. Throws SessionFileError.
SessionFile readSessionFile(const QString& path);
QByteArray sessionFileJson(const SessionFile& session);
// Atomic: a failure leaves any earlier file whole. Throws io::IoError naming the path.
void writeSessionFile(const QString& path, const SessionFile& session);

// The window's autosave in its session folder, restored on the next launch. An unreadable autosave is
// never overwritten with defaults: it is moved aside (autosave.ropescope.json.corrupt-<time>[-n], never
// replacing a file); if that fails, autosaving stops for this run.
class Autosave {
public:
    explicit Autosave(QString dir);

    QString path() const;
    bool enabled() const { return enabled_; }

    struct Restored {
        std::optional<SessionFile> session; // nothing when there was none or it was unusable
        QString problem;                    // why it was unusable and what became of it
    };
    Restored restore();
    // Moves the autosave aside (autosave.ropescope.json.corrupt-<time>) because it could not be used, and
    // says so: `why`, what became of it, and that the window starts from defaults. When it cannot be
    // moved, autosave turns off, so the file is never replaced.
    QString setAside(const QString& why);
    // Throws io::IoError when the folder or the file cannot be written; does nothing when disabled.
    void write(const SessionFile& session) const;

private:
    QString dir_;
    bool enabled_ = true;
};

} // namespace ropescope::session

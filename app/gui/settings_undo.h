#pragma once
// The window's undo stack entries: one change of the settings a researcher tunes (the explorer's state and
// the Attention tab's settings), as the session before and after it. Changes of the same settings in quick
// succession merge, so a slider drag is one step.
#include "core/session/session_file.h"

#include <QElapsedTimer>
#include <QUndoCommand>

#include <functional>

namespace ropescope::gui {

// The session as JSON without the camera (moving the view is not a settings change), for comparisons.
QByteArray settingsKey(const session::SessionFile& file);
// "Change alpha", "Change layout, scheme", "Change attention question": the settings that differ.
QString describeChange(const session::SessionFile& before, const session::SessionFile& after);

class SettingsCommand : public QUndoCommand {
public:
    using Apply = std::function<void(const session::SessionFile&)>;
    // `text` empty: describeChange. The change has already happened: the first redo does nothing.
    SettingsCommand(Apply apply, session::SessionFile before, session::SessionFile after, const QString& text = {});
    void undo() override;
    void redo() override;
    int id() const override { return 1; }
    bool mergeWith(const QUndoCommand* other) override;

private:
    Apply apply_;
    session::SessionFile before_, after_;
    bool done_ = true;
    QElapsedTimer sinceLast_;
};

} // namespace ropescope::gui

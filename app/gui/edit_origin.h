#pragma once
// Whether what the window applies now is the user's doing. Only a state the user made may replace the
// autosave or become an undo step: not the restored session while it is applied (synchronously, or computing
// on the worker for a large layout), not the defaults the window falls back to when it cannot be applied, and
// not an undo or redo itself. Edits the user makes while a restored session still computes are saved once it
// is in. MainWindow asks this class instead of keeping one bool per case; each transition is named.
#include <utility>

namespace ropescope::gui {

class EditOrigin {
public:
    // Restoring: the autosave's session (or the defaults in its place) is being applied by the window itself.
    void beginRestore() { restoring_ = applyingRestored_ = true; }
    // The restoring call returned; `stillComputing`: its layout is on the worker, its result not yet adopted.
    void restoreCallReturned(bool stillComputing)
    {
        applyingRestored_ = false;
        restoring_ = stillComputing;
    }
    // The defaults applied in place of a session the window would not run (its scheme file not trusted).
    void beginFallback() { applyingRestored_ = true; }
    void fallbackApplied() { applyingRestored_ = false; }

    // A state request: one the user made overtakes a restored session still computing (which is then dropped).
    void requested()
    {
        if (!applyingRestored_ && restoring_) {
            restoring_ = false;
            editedWhileRestoring_ = true;
        }
    }
    // A computed state arrives. True when it is the restored session's own (computed on the worker).
    bool restoredArrived()
    {
        const bool restored = restoring_ && !applyingRestored_;
        if (restored)
            restoring_ = false;
        return restored;
    }
    // A state was adopted (`restored`: what restoredArrived said): whether it is the user's to save. The restored
    // state itself is not, unless the user edited meanwhile.
    bool adoptedIsTheUsers(bool restored)
    {
        if (applyingRestored_ || restoring_)
            return false;
        return !restored || std::exchange(editedWhileRestoring_, false);
    }

    enum class Edit { Ignore, Defer, Record };
    // The window's settings changed: ignore (the restored session's own settings arriving), defer (saved once
    // the restored session is in) or record (an undo step and an autosave).
    Edit edited()
    {
        if (applyingRestored_)
            return Edit::Ignore;
        if (restoring_) {
            editedWhileRestoring_ = true;
            return Edit::Defer;
        }
        return Edit::Record;
    }
    // The autosave may be written now.
    bool mayAutosave() const { return !restoring_ && !applyingRestored_; }

    // Undo and redo apply a recorded step: not recorded again.
    void beginUndo() { undoing_ = true; }
    void undoApplied() { undoing_ = false; }
    bool undoing() const { return undoing_; }

private:
    bool restoring_ = false;            // from the restore until its state is adopted (or overtaken)
    bool applyingRestored_ = false;     // inside the call that applies the restored session or the fallback
    bool editedWhileRestoring_ = false; // the user changed something meanwhile
    bool undoing_ = false;
};

} // namespace ropescope::gui

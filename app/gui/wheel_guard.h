#pragma once
#include <QObject>

namespace ropescope::gui {

// Spin boxes, combo boxes and sliders take the mouse wheel only when they have the keyboard focus, as Qt
// applications usually do: scrolling a panel over them scrolls the panel instead of silently changing the
// control under the pointer (head_dim went 128 -> 106 that way, and was autosaved). Installed once on the
// application; the wheel goes to the nearest scroll area around the control. Such controls never take the
// focus from the wheel itself (their wheel-focus policy becomes strong focus when they are polished), and in a
// spin box Ctrl+Z / Ctrl+Shift+Z reach the window's Undo and Redo instead of the spin box's own text undo.
class WheelGuard : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    static void installOnce(); // on qApp

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
};

} // namespace ropescope::gui

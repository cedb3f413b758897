#pragma once
#include <QString>

class QWidget;

namespace ropescope::gui {

// A test hook for driving the real window with real X input (tests/gui_x11): with ROPESCOPE_PRINT_STATE=FILE
// the window writes FILE five times a second when it changes: the autosave's path, and every named, visible
// widget with its screen rectangle, focus, enabled state and shown value (text, number, choice). A script
// moves the pointer to a control by its name and reads back what the control and the autosave then hold.
void startStateDump(QWidget* window, const QString& autosavePath, const QString& file);

} // namespace ropescope::gui

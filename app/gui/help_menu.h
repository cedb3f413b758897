#pragma once
class QMainWindow;

namespace ropescope::gui {

// Help: About (RopeScope's version and the Qt, VTK and LibTorch it runs on), Keyboard shortcuts (every
// action of the window that has one, read from the actions themselves) and Documentation (the docs folder
// beside the resources, else where it lives in the source tree).
void addHelpMenu(QMainWindow* window);

} // namespace ropescope::gui

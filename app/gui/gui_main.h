#pragma once

namespace ropescope::gui {

// Opens the explorer window and runs the event loop; returns the exit code.
int runGui(int& argc, char** argv);

} // namespace ropescope::gui

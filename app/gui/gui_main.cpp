#include "app/gui/gui_main.h"

#include "app/gui/main_window.h"
#include "app/gui/state_dump.h"
#include "views/widgets/vtk_view_widget.h"

#include <QApplication>
#include <QStandardPaths>

#include <cstdio>

namespace ropescope::gui {

int runGui(int& argc, char** argv)
{
    // Debian's GLEW only speaks GLX: an EGL-based Qt platform (Wayland) would leave VTK without GL.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "xcb");
    if (qgetenv("QT_QPA_PLATFORM") == "xcb" && qEnvironmentVariableIsEmpty("DISPLAY")) {
        std::fputs("ropescope: no X display for the window (DISPLAY is not set). Run it under xvfb-run, or use the\n"
                   "headless commands: ropescope render / ptd / positions / batch (see --help).\n",
                   stderr);
        return 1;
    }
    views::VtkViewWidget::setDefaultSurfaceFormat();
    QApplication app(argc, argv);
    QApplication::setApplicationName("ropescope");
    QApplication::setOrganizationName("ropescope");
    QString sessionDir = qEnvironmentVariable("ROPESCOPE_SESSION_DIR");
    if (sessionDir.isEmpty())
        sessionDir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    MainWindow window(sessionDir);
    if (const QString dump = qEnvironmentVariable("ROPESCOPE_PRINT_STATE"); !dump.isEmpty())
        startStateDump(&window, window.autosavePath(), dump); // tests/gui_x11: real input, state read back
    window.show();
    return app.exec();
}

} // namespace ropescope::gui

#pragma once
#include <vtkGenericOpenGLRenderWindow.h>

namespace ropescope::views {

// A VTK render window on a context that someone else made current (EGL surfaceless, or Qt's).
// GLEW here is built for GLX: with no X display glewInit() loads every GL entry point and then fails
// its GLX step with GLEW_ERROR_NO_GLX_DISPLAY. That result is accepted here; anything else is an error.
class OffscreenWindow : public vtkGenericOpenGLRenderWindow {
public:
    static OffscreenWindow* New();
    vtkTypeMacro(OffscreenWindow, vtkGenericOpenGLRenderWindow)

        void OpenGLInitContext() override;

protected:
    OffscreenWindow() = default;
    ~OffscreenWindow() override = default;
};

} // namespace ropescope::views

#include "views/render/offscreen_window.h"

#include <vtkObjectFactory.h>
#include <vtk_glew.h>

namespace ropescope::views {

vtkStandardNewMacro(OffscreenWindow);

void OffscreenWindow::OpenGLInitContext()
{
    this->ContextCreationTime.Modified();
    if (this->Initialized)
        return;
    const GLenum result = glewInit();
    this->GlewInitValid = result == GLEW_OK || result == GLEW_ERROR_NO_GLX_DISPLAY;
    if (!this->GlewInitValid) {
        vtkErrorMacro("GLEW could not be initialized: " << reinterpret_cast<const char*>(glewGetErrorString(result)));
        return;
    }
    if (!GLEW_VERSION_3_2) {
        vtkErrorMacro("OpenGL 3.2 is required");
        return;
    }
    this->Initialized = true;
    GLfloat range[2] = {1, 1};
    glGetFloatv(GL_ALIASED_LINE_WIDTH_RANGE, range);
    this->MaximumHardwareLineWidth = glGetError() == GL_NO_ERROR ? range[1] : 1.0f;
}

} // namespace ropescope::views

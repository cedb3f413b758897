#include "views/render/egl_context.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>

#include <stdexcept>

namespace ropescope::views {

struct EglContext::Impl {
    EGLDisplay display = EGL_NO_DISPLAY;
    EGLContext context = EGL_NO_CONTEXT;
};

namespace {
[[noreturn]] void fail(const char* step)
{
    throw std::runtime_error(std::string("headless OpenGL: ") + step + " failed (EGL error 0x" + [] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x", eglGetError());
        return std::string(buf);
    }() + "); install libegl-mesa0 and libgl1-mesa-dri, or run under xvfb-run");
}
} // namespace

EglContext::EglContext() : d(std::make_unique<Impl>())
{
    auto getPlatformDisplay = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
    if (!getPlatformDisplay)
        fail("eglGetPlatformDisplayEXT lookup");
    d->display = getPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (d->display == EGL_NO_DISPLAY)
        fail("surfaceless display");
    EGLint major = 0, minor = 0;
    if (!eglInitialize(d->display, &major, &minor))
        fail("eglInitialize");
    if (!eglBindAPI(EGL_OPENGL_API))
        fail("eglBindAPI(OpenGL)");
    const EGLint configAttribs[] = {EGL_SURFACE_TYPE,
                                    EGL_PBUFFER_BIT,
                                    EGL_RENDERABLE_TYPE,
                                    EGL_OPENGL_BIT,
                                    EGL_RED_SIZE,
                                    8,
                                    EGL_GREEN_SIZE,
                                    8,
                                    EGL_BLUE_SIZE,
                                    8,
                                    EGL_DEPTH_SIZE,
                                    24,
                                    EGL_NONE};
    EGLConfig config = nullptr;
    EGLint count = 0;
    // Surfaceless contexts need no config on Mesa; use one if offered so the context matches it.
    if (!eglChooseConfig(d->display, configAttribs, &config, 1, &count) || count == 0)
        config = nullptr;
    const EGLint contextAttribs[] = {
        EGL_CONTEXT_MAJOR_VERSION,           3,       EGL_CONTEXT_MINOR_VERSION, 2, EGL_CONTEXT_OPENGL_PROFILE_MASK,
        EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    d->context = eglCreateContext(d->display, config, EGL_NO_CONTEXT, contextAttribs);
    if (d->context == EGL_NO_CONTEXT)
        fail("eglCreateContext(OpenGL 3.2 core)");
    makeCurrent();
}

EglContext::~EglContext()
{
    if (d->display != EGL_NO_DISPLAY) {
        eglMakeCurrent(d->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        if (d->context != EGL_NO_CONTEXT)
            eglDestroyContext(d->display, d->context);
        eglTerminate(d->display);
    }
}

void EglContext::makeCurrent()
{
    if (eglGetCurrentContext() != d->context && !eglMakeCurrent(d->display, EGL_NO_SURFACE, EGL_NO_SURFACE, d->context))
        fail("eglMakeCurrent");
}

std::string EglContext::renderer() const
{
    const auto* r = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    return r ? r : "unknown";
}

} // namespace ropescope::views

#pragma once
#include <memory>
#include <string>

namespace ropescope::views {

// An OpenGL 3.2 core context on Mesa's surfaceless EGL platform: rendering with no X server or
// Wayland display at all. Debian's VTK only knows GLX windows, so headless rendering goes through this.
class EglContext {
public:
    // Throws std::runtime_error naming the EGL step that failed.
    EglContext();
    ~EglContext();
    EglContext(const EglContext&) = delete;
    EglContext& operator=(const EglContext&) = delete;

    void makeCurrent();
    std::string renderer() const; // GL_RENDERER, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace ropescope::views

#pragma once
#include "views/scene/cone_scene.h"

#include <QImage>
#include <QSize>

#include <memory>
#include <string>

class vtkRenderer;
class vtkRenderWindow;

namespace ropescope::views {

// A cone scene rendered with no window: on Mesa's surfaceless EGL (no display needed), or, if EGL is
// unavailable and an X display is set, on an offscreen GLX window. Any resolution, independent of a GUI.
class OffscreenView {
public:
    explicit OffscreenView(QSize size = {1200, 900}); // throws std::runtime_error if no GL route works
    ~OffscreenView();

    ConeScene& scene() { return *scene_; }
    vtkRenderer* renderer() const;
    void setSize(QSize size);
    QSize size() const { return size_; }
    // Renders and reads the frame back (RGB, top row first).
    QImage grab();
    // Renders and waits for the GL pipeline to finish: what an interactive frame costs.
    void renderAndFinish();
    std::string route() const; // "egl (llvmpipe ...)" or "glx"

private:
    struct Impl;
    std::unique_ptr<Impl> d;
    std::unique_ptr<ConeScene> scene_;
    QSize size_;
};

} // namespace ropescope::views

#include "views/render/offscreen_view.h"

#include "views/render/egl_context.h"
#include "views/render/offscreen_window.h"

#include <vtkNew.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkUnsignedCharArray.h>
#include <vtk_glew.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ropescope::views {

struct OffscreenView::Impl {
    std::unique_ptr<EglContext> egl;
    vtkSmartPointer<vtkRenderWindow> window;
    vtkNew<vtkRenderer> renderer;
    std::string route;
};

OffscreenView::OffscreenView(QSize size) : d(std::make_unique<Impl>()), size_(size)
{
    try {
        d->egl = std::make_unique<EglContext>();
        vtkNew<OffscreenWindow> window;
        window->SetSize(size.width(), size.height());
        window->SetFrameBlitModeToNoBlit(); // a surfaceless context has no default framebuffer to blit to
        window->SetMultiSamples(0);
        window->InitializeFromCurrentContext();
        window->SetReadyForRendering(true);
        window->SetIsCurrent(true);
        d->route = "egl (" + d->egl->renderer() + ")";
        d->window = window;
    } catch (const std::runtime_error&) {
        const char* display = std::getenv("DISPLAY");
        if (!display || !*display)
            throw;
        d->egl.reset();
        d->window = vtkSmartPointer<vtkRenderWindow>::New();
        d->window->SetOffScreenRendering(1);
        d->window->SetMultiSamples(0);
        d->window->SetSize(size.width(), size.height());
        d->route = "glx";
    }
    d->window->AddRenderer(d->renderer);
    scene_ = std::make_unique<ConeScene>(d->renderer);
}

OffscreenView::~OffscreenView()
{
    scene_.reset();
    if (d->egl)
        d->egl->makeCurrent();
    d->window->RemoveRenderer(d->renderer);
    d->window->Finalize();
}

vtkRenderer* OffscreenView::renderer() const
{
    return d->renderer;
}

std::string OffscreenView::route() const
{
    return d->route;
}

void OffscreenView::setSize(QSize size)
{
    size_ = size;
    d->window->SetSize(size.width(), size.height());
}

void OffscreenView::renderAndFinish()
{
    if (d->egl)
        d->egl->makeCurrent();
    d->window->Render();
    glFinish();
}

QImage OffscreenView::grab()
{
    renderAndFinish();
    const int w = size_.width(), h = size_.height();
    vtkNew<vtkUnsignedCharArray> pixels;
    // front = 0: read VTK's own render framebuffer (nothing is blitted to a display buffer).
    d->window->GetPixelData(0, 0, w - 1, h - 1, d->egl ? 0 : 1, pixels);
    QImage image(w, h, QImage::Format_RGB888);
    const unsigned char* src = pixels->GetPointer(0);
    for (int y = 0; y < h; ++y)
        std::memcpy(image.scanLine(h - 1 - y), src + static_cast<size_t>(y) * w * 3, static_cast<size_t>(w) * 3);
    return image;
}

} // namespace ropescope::views

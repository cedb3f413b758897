#include "views/widgets/vtk_view_widget.h"

#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <vtkCallbackCommand.h>
#include <vtkCamera.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkOpenGLState.h>
#include <vtkRenderer.h>

namespace ropescope::views {

void VtkViewWidget::setDefaultSurfaceFormat()
{
    QSurfaceFormat format;
    format.setRenderableType(QSurfaceFormat::OpenGL);
    format.setVersion(3, 2);
    format.setProfile(QSurfaceFormat::CoreProfile);
    format.setSamples(0);
    format.setDepthBufferSize(24);
    format.setStencilBufferSize(8);
    QSurfaceFormat::setDefaultFormat(format);
}

VtkViewWidget::VtkViewWidget(QWidget* parent) : QOpenGLWidget(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(false);
    window_->AddRenderer(renderer_);
    window_->SetMultiSamples(0);
    window_->SetFrameBlitModeToNoBlit(); // we blit into Qt's framebuffer ourselves in paintGL
    interactor_->SetRenderWindow(window_);
    vtkNew<vtkInteractorStyleTrackballCamera> style;
    interactor_->SetInteractorStyle(style);
    // Interaction asks for a repaint instead of rendering behind Qt's back.
    interactor_->EnableRenderOff();

    auto onMakeCurrent = vtkSmartPointer<vtkCallbackCommand>::New();
    onMakeCurrent->SetClientData(this);
    onMakeCurrent->SetCallback([](vtkObject*, unsigned long, void* client, void*) {
        auto* self = static_cast<VtkViewWidget*>(client);
        // Not QOpenGLWidget::makeCurrent(): that rebinds Qt's FBO mid-render (a black image).
        if (self->context() && QOpenGLContext::currentContext() != self->context())
            self->context()->makeCurrent(self->context()->surface());
    });
    window_->AddObserver(vtkCommand::WindowMakeCurrentEvent, onMakeCurrent);

    auto onIsCurrent = vtkSmartPointer<vtkCallbackCommand>::New();
    onIsCurrent->SetClientData(this);
    onIsCurrent->SetCallback([](vtkObject*, unsigned long, void* client, void* callData) {
        auto* self = static_cast<VtkViewWidget*>(client);
        *static_cast<bool*>(callData) = self->context() && QOpenGLContext::currentContext() == self->context();
    });
    window_->AddObserver(vtkCommand::WindowIsCurrentEvent, onIsCurrent);

    auto onRender = vtkSmartPointer<vtkCallbackCommand>::New();
    onRender->SetClientData(this);
    onRender->SetCallback([](vtkObject*, unsigned long, void* client, void*) { static_cast<VtkViewWidget*>(client)->update(); });
    interactor_->AddObserver(vtkCommand::RenderEvent, onRender);
}

VtkViewWidget::~VtkViewWidget()
{
    makeCurrent();
    window_->Finalize(); // release GL resources while the context still exists
    doneCurrent();
}

vtkRenderer* VtkViewWidget::renderer() const
{
    return renderer_;
}

void VtkViewWidget::initializeGL()
{
    window_->SetOwnContext(0);
    window_->OpenGLInitContext();
    window_->SetReadyForRendering(true);
    interactor_->Initialize();
}

void VtkViewWidget::resizeGL(int w, int h)
{
    const double ratio = devicePixelRatioF();
    const int pw = static_cast<int>(w * ratio), ph = static_cast<int>(h * ratio);
    window_->SetSize(pw, ph);
    interactor_->UpdateSize(pw, ph);
    Q_EMIT resized();
}

void VtkViewWidget::paintGL()
{
    vtkOpenGLState* state = window_->GetState();
    state->Reset();
    state->Push();
    state->vtkglDepthFunc(GL_LEQUAL);
    window_->Render();

    // Copy VTK's frame into the widget's framebuffer and make it opaque (Qt composes with alpha).
    const int w = window_->GetSize()[0], h = window_->GetSize()[1];
    state->PushDrawFramebufferBinding();
    QOpenGLFunctions* gl = context()->functions();
    gl->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
    window_->BlitDisplayFramebuffer(0, 0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST);
    state->PopDrawFramebufferBinding();
    gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
    gl->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
    gl->glClearColor(0, 0, 0, 1);
    gl->glClear(GL_COLOR_BUFFER_BIT);
    gl->glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    state->Pop();
}

void VtkViewWidget::forwardMouse(QMouseEvent* event, unsigned long vtkEvent)
{
    const double ratio = devicePixelRatioF();
    const QPointF p = event->position();
    interactor_->SetEventInformationFlipY(static_cast<int>(p.x() * ratio), static_cast<int>(p.y() * ratio),
                                          event->modifiers() & Qt::ControlModifier ? 1 : 0, event->modifiers() & Qt::ShiftModifier ? 1 : 0);
    invokeWatchingCamera(vtkEvent, event);
}

void VtkViewWidget::invokeWatchingCamera(unsigned long vtkEvent, void* callData)
{
    // Only a camera that the input moved is the user's: not the interactor's own renders (Initialize() at
    // start-up), nor a click that picks a token.
    vtkCamera* camera = renderer_->GetActiveCamera();
    const vtkMTimeType before = camera->GetMTime();
    interactor_->InvokeEvent(vtkEvent, callData);
    if (camera->GetMTime() != before)
        Q_EMIT cameraChanged();
}

void VtkViewWidget::mousePressEvent(QMouseEvent* event)
{
    pressPosition_ = event->pos();
    dragged_ = false;
    switch (event->button()) {
    case Qt::LeftButton: forwardMouse(event, vtkCommand::LeftButtonPressEvent); break;
    case Qt::MiddleButton: forwardMouse(event, vtkCommand::MiddleButtonPressEvent); break;
    case Qt::RightButton: forwardMouse(event, vtkCommand::RightButtonPressEvent); break;
    default: break;
    }
}

void VtkViewWidget::mouseMoveEvent(QMouseEvent* event)
{
    if ((event->pos() - pressPosition_).manhattanLength() > 3)
        dragged_ = true;
    forwardMouse(event, vtkCommand::MouseMoveEvent);
}

void VtkViewWidget::mouseReleaseEvent(QMouseEvent* event)
{
    switch (event->button()) {
    case Qt::LeftButton:
        forwardMouse(event, vtkCommand::LeftButtonReleaseEvent);
        if (!dragged_) {
            const double ratio = devicePixelRatioF();
            Q_EMIT clicked(event->position().x() * ratio, (height() - event->position().y()) * ratio);
        }
        break;
    case Qt::MiddleButton: forwardMouse(event, vtkCommand::MiddleButtonReleaseEvent); break;
    case Qt::RightButton: forwardMouse(event, vtkCommand::RightButtonReleaseEvent); break;
    default: break;
    }
}

void VtkViewWidget::wheelEvent(QWheelEvent* event)
{
    const double ratio = devicePixelRatioF();
    const QPointF p = event->position();
    interactor_->SetEventInformationFlipY(static_cast<int>(p.x() * ratio), static_cast<int>(p.y() * ratio));
    // One VTK wheel step per 120 units (one notch), so trackpads do not zoom in huge jumps.
    wheelAccumulated_ += event->angleDelta().y();
    while (wheelAccumulated_ >= 120) {
        invokeWatchingCamera(vtkCommand::MouseWheelForwardEvent, event);
        wheelAccumulated_ -= 120;
    }
    while (wheelAccumulated_ <= -120) {
        invokeWatchingCamera(vtkCommand::MouseWheelBackwardEvent, event);
        wheelAccumulated_ += 120;
    }
    event->accept();
}

void VtkViewWidget::keyPressEvent(QKeyEvent* event)
{
    // Keep VTK's own keys (e.g. 'q' quits, 'e' exits) away from the application; Qt handles keys.
    QOpenGLWidget::keyPressEvent(event);
}

} // namespace ropescope::views

#pragma once
#include <QOpenGLWidget>
#include <QPoint>

#include <vtkNew.h>

class vtkGenericOpenGLRenderWindow;
class vtkGenericRenderWindowInteractor;
class vtkRenderer;

namespace ropescope::views {

// Hosts a VTK renderer in a Qt6 QOpenGLWidget (Debian's VTK Qt module is Qt5-only). VTK renders into its
// own framebuffer on Qt's context and the result is blitted into the widget's framebuffer; Qt mouse,
// wheel and key events drive a trackball-camera interactor. The caller must set a 3.2 core default
// QSurfaceFormat before creating the QApplication (see defaultSurfaceFormat()).
class VtkViewWidget : public QOpenGLWidget {
    Q_OBJECT
public:
    explicit VtkViewWidget(QWidget* parent = nullptr);
    ~VtkViewWidget() override;

    vtkRenderer* renderer() const;

    static void setDefaultSurfaceFormat();

Q_SIGNALS:
    // A left click that did not drag, in VTK display coordinates (pixels, origin bottom left).
    void clicked(double x, double y);
    // The camera moved through mouse interaction.
    void cameraChanged();
    // The drawable size changed (the camera may need refitting).
    void resized();

protected:
    void initializeGL() override;
    void resizeGL(int w, int h) override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    void forwardMouse(QMouseEvent* event, unsigned long vtkEvent);
    void invokeWatchingCamera(unsigned long vtkEvent, void* callData); // emits cameraChanged() if it moved

    vtkNew<vtkGenericOpenGLRenderWindow> window_;
    vtkNew<vtkGenericRenderWindowInteractor> interactor_;
    vtkNew<vtkRenderer> renderer_;
    QPoint pressPosition_;
    bool dragged_ = false;
    int wheelAccumulated_ = 0;
};

} // namespace ropescope::views

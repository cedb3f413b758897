#pragma once
#include "core/geometry/position_table.h"
#include "views/scene/scene_options.h"

#include <Eigen/Core>
#include <vtkNew.h>
#include <vtkSmartPointer.h>

#include <cstdint>
#include <vector>

class vtkActor;
class vtkBillboardTextActor3D;
class vtkCallbackCommand;
class vtkPolyData;
class vtkRenderer;

namespace ropescope::views {

// The 3-D cone view as a VTK scene: text tokens along their axis, visual tokens as shaded sphere imposters
// (one vertex per token, drawn as a lit sphere by the point shader: one actor for thousands of tokens),
// Circle-RoPE rings, cone lines (and an optional translucent cone) from the selected text token, and
// labelled t/h/w axes. It fills a renderer it is given, so the Qt window and the offscreen renderer draw
// the same scene; update() rewrites the data in place, so a parameter change re-uploads points only.
class ConeScene {
public:
    explicit ConeScene(vtkRenderer* renderer);
    ~ConeScene();
    ConeScene(const ConeScene&) = delete;
    ConeScene& operator=(const ConeScene&) = delete;

    void update(const geometry::PositionTable& table, const SceneOptions& options);
    // Points the camera along a preset direction and fits the scene.
    void applyCamera(CameraPreset preset);
    // The camera as the user left it, and back (sessions restore it; exports copy the window's).
    session::CameraState cameraState() const;
    void setCameraState(const session::CameraState& camera);
    // The token drawn nearest to display pixel (x, y) (VTK convention: origin bottom left), or -1 when
    // none is within maxPixels.
    int pickToken(double x, double y, double maxPixels = 12.0) const;

    const Eigen::MatrixX3d& world() const { return world_; }
    vtkRenderer* renderer() const { return renderer_; }

private:
    void buildPipeline();
    void updateTokens(const geometry::PositionTable& table, const SceneOptions& options);
    void updateRings(const geometry::PositionTable& table);
    void updateCone(const geometry::PositionTable& table, const SceneOptions& options);
    void updateAxes();
    void updateLabels(const geometry::PositionTable& table, const SceneOptions& options);
    // Point sprites are sized in pixels: before each render, convert the world radius at the focal
    // distance so tokens keep their size relative to the scene when zooming.
    void syncPointSizes();
    // Also before each render: label fonts scale with the image height (an export at 2400x1800 gets
    // readable labels), and token labels that would overlap an earlier one on screen are hidden (the
    // selected token's label first).
    void declutterLabels(double scale, double diameter); // diameter: a token's sphere on screen, in pixels
    vtkBillboardTextActor3D* label(std::vector<vtkSmartPointer<vtkBillboardTextActor3D>>& pool, size_t i);

    vtkRenderer* renderer_;
    Eigen::MatrixX3d world_;
    double glyphRadius_ = 0.2;
    Eigen::Vector3d boundsMin_{0, 0, 0}, boundsMax_{1, 1, 1};

    vtkNew<vtkPolyData> textPoints_, visualPoints_, textAxis_, rings_, coneLines_, coneSurface_, selected_, highlighted_, axes_;
    vtkNew<vtkActor> textActor_, visualActor_, textAxisActor_, ringActor_, coneLineActor_, coneSurfaceActor_, selectedActor_,
        highlightedActor_, axesActor_;
    std::vector<vtkSmartPointer<vtkBillboardTextActor3D>> axisLabels_, tokenLabels_;
    size_t tokenLabelsUsed_ = 0;
    size_t selectedLabel_ = SIZE_MAX; // index in tokenLabels_ of the selected token's label
    vtkNew<vtkCallbackCommand> beforeRender_;
    unsigned long beforeRenderTag_ = 0;
};

} // namespace ropescope::views

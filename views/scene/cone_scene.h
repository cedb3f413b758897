#pragma once
#include "geometry/position_table.h"
#include "scene_options.h"

#include <Eigen/Core>
#include <vtkNew.h>
#include <vtkSmartPointer.h>

#include <vector>

class vtkActor;
class vtkBillboardTextActor3D;
class vtkGlyph3DMapper;
class vtkPolyData;
class vtkRenderer;

namespace ropescope::views {

// The 3-D cone view as a VTK scene: text tokens along their axis, visual tokens as instanced glyphs,
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
    // The token drawn nearest to display pixel (x, y) (VTK convention: origin bottom left), or -1 when
    // none is within maxPixels.
    int pickToken(double x, double y, double maxPixels = 12.0) const;

    const Eigen::MatrixX3d& world() const { return world_; }
    double glyphRadius() const { return glyphRadius_; }
    vtkRenderer* renderer() const { return renderer_; }

private:
    void buildPipeline();
    void updateTokens(const geometry::PositionTable& table, const SceneOptions& options);
    void updateRings(const geometry::PositionTable& table);
    void updateCone(const geometry::PositionTable& table, const SceneOptions& options);
    void updateAxes();
    void updateLabels(const geometry::PositionTable& table, const SceneOptions& options);

    vtkRenderer* renderer_;
    Eigen::MatrixX3d world_;
    double glyphRadius_ = 0.2;
    Eigen::Vector3d boundsMin_{0, 0, 0}, boundsMax_{1, 1, 1};

    vtkNew<vtkPolyData> textPoints_, visualPoints_, textAxis_, rings_, coneLines_, coneSurface_, selected_, axes_;
    vtkNew<vtkGlyph3DMapper> textGlyphs_, visualGlyphs_, selectedGlyph_;
    vtkNew<vtkActor> textActor_, visualActor_, textAxisActor_, ringActor_, coneLineActor_, coneSurfaceActor_,
        selectedActor_, axesActor_;
    std::vector<vtkSmartPointer<vtkBillboardTextActor3D>> axisLabels_, tokenLabels_;
};

} // namespace ropescope::views

#include "views/scene/cone_scene.h"

#include "views/scene/colormap.h"
#include "views/scene/world_mapping.h"

#include <vtkActor.h>
#include <vtkBillboardTextActor3D.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCoordinate.h>
#include <vtkCallbackCommand.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkRenderStepsPass.h>
#include <vtkTextProperty.h>
#include <vtkUnsignedCharArray.h>

#include <QRectF>

#include <algorithm>
#include <cstring>
#include <cmath>

namespace ropescope::views {
using geometry::PositionTable;

namespace {

double kTextColour[3] = {0.20, 0.33, 0.60};
double kSelectedColour[3] = {0.90, 0.25, 0.10};

// Points with one vertex cell each, so the mapper draws every one of them.
void setPoints(vtkPolyData* poly, const Eigen::MatrixX3d& world, const std::vector<int>& rows)
{
    vtkNew<vtkPoints> points;
    points->SetDataTypeToDouble();
    points->SetNumberOfPoints(static_cast<vtkIdType>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i)
        points->SetPoint(static_cast<vtkIdType>(i), world(rows[i], 0), world(rows[i], 1), world(rows[i], 2));
    poly->SetPoints(points);
    vtkNew<vtkCellArray> verts;
    verts->AllocateExact(static_cast<vtkIdType>(rows.size()), static_cast<vtkIdType>(rows.size()));
    for (vtkIdType i = 0; i < static_cast<vtkIdType>(rows.size()); ++i)
        verts->InsertNextCell(1, &i);
    poly->SetVerts(verts);
}

void styleLabel(vtkBillboardTextActor3D* label, const char* text, const Eigen::Vector3d& at, int size, bool bold, bool dark)
{
    label->SetInput(text); // unchanged text keeps its texture
    label->SetPosition(at.x(), at.y(), at.z());
    vtkTextProperty* p = label->GetTextProperty();
    p->SetFontSize(size);
    p->SetBold(bold);
    p->SetJustificationToCentered();
    p->SetVerticalJustificationToCentered();
    const double c = dark ? 0.92 : 0.12;
    p->SetColor(c, c, c);
}

} // namespace

ConeScene::ConeScene(vtkRenderer* renderer) : renderer_(renderer)
{
    // VTK's default translucent pass is order-independent: full-frame float accumulation buffers, blended and
    // blitted every frame. On a software GL (llvmpipe) that was most of the live view's frame (docs/SPEED.md, "The
    // live view"). The scene's translucent pieces (the text axis, cone lines and surface, the
    // highlight halo, labels) barely overlap one another, so plain blending in draw order looks the same.
    vtkNew<vtkRenderStepsPass> steps;
    renderer_->SetPass(steps);
    buildPipeline();
}

ConeScene::~ConeScene()
{
    renderer_->RemoveObserver(beforeRenderTag_);
    for (auto* pool : {&axisLabels_, &tokenLabels_})
        for (auto& l : *pool)
            renderer_->RemoveActor(l);
    for (vtkActor* a : {textActor_.Get(), visualActor_.Get(), textAxisActor_.Get(), ringActor_.Get(), coneLineActor_.Get(),
                        coneSurfaceActor_.Get(), selectedActor_.Get(), highlightedActor_.Get(), axesActor_.Get()})
        renderer_->RemoveActor(a);
}

void ConeScene::buildPipeline()
{
    auto pointActor = [](vtkActor* actor, vtkPolyData* data, bool scalars) {
        vtkNew<vtkPolyDataMapper> mapper;
        mapper->SetInputData(data);
        mapper->SetScalarVisibility(scalars);
        if (scalars) {
            mapper->SetScalarModeToUsePointData();
            mapper->SetColorModeToDirectScalars();
        }
        actor->SetMapper(mapper);
        actor->GetProperty()->SetRepresentationToPoints();
        actor->GetProperty()->RenderPointsAsSpheresOn();
        actor->GetProperty()->SetSpecular(0.25);
    };
    pointActor(textActor_, textPoints_, false);
    textActor_->GetProperty()->SetColor(kTextColour);
    pointActor(visualActor_, visualPoints_, true);
    pointActor(selectedActor_, selected_, false);
    selectedActor_->GetProperty()->SetColor(kSelectedColour);
    pointActor(highlightedActor_, highlighted_, false);
    highlightedActor_->GetProperty()->SetColor(1.0, 0.62, 0.0);
    highlightedActor_->GetProperty()->SetOpacity(0.55); // a halo: the token's own colour stays visible inside

    auto lineActor = [](vtkActor* actor, vtkPolyData* data, double r, double g, double b, double opacity, float width) {
        vtkNew<vtkPolyDataMapper> mapper;
        mapper->SetInputData(data);
        mapper->ScalarVisibilityOff();
        actor->SetMapper(mapper);
        actor->GetProperty()->SetColor(r, g, b);
        actor->GetProperty()->SetOpacity(opacity);
        actor->GetProperty()->SetLineWidth(width);
        actor->GetProperty()->LightingOff();
    };
    lineActor(textAxisActor_, textAxis_, kTextColour[0], kTextColour[1], kTextColour[2], 0.6, 1.5f);
    lineActor(ringActor_, rings_, 0.35, 0.35, 0.35, 1.0, 1.5f);
    lineActor(coneLineActor_, coneLines_, kSelectedColour[0], kSelectedColour[1], kSelectedColour[2], 0.35, 1.0f);
    lineActor(coneSurfaceActor_, coneSurface_, kSelectedColour[0], kSelectedColour[1], kSelectedColour[2], 0.12, 1.0f);
    coneSurfaceActor_->GetProperty()->LightingOn();
    lineActor(axesActor_, axes_, 0.45, 0.45, 0.45, 1.0, 2.0f);

    for (vtkActor* a : {axesActor_.Get(), textAxisActor_.Get(), ringActor_.Get(), coneSurfaceActor_.Get(), coneLineActor_.Get(),
                        textActor_.Get(), visualActor_.Get(), selectedActor_.Get(), highlightedActor_.Get()})
        renderer_->AddActor(a);
    for (int i = 0; i < 3; ++i) {
        axisLabels_.push_back(vtkSmartPointer<vtkBillboardTextActor3D>::New());
        renderer_->AddActor(axisLabels_.back());
    }

    beforeRender_->SetClientData(this);
    beforeRender_->SetCallback([](vtkObject*, unsigned long, void* self, void*) { static_cast<ConeScene*>(self)->syncPointSizes(); });
    beforeRenderTag_ = renderer_->AddObserver(vtkCommand::StartEvent, beforeRender_);
}

void ConeScene::syncPointSizes()
{
    vtkCamera* camera = renderer_->GetActiveCamera();
    const int* size = renderer_->GetSize();
    double pixelsPerUnit;
    if (camera->GetParallelProjection())
        pixelsPerUnit = size[1] / (2.0 * camera->GetParallelScale());
    else
        pixelsPerUnit = size[1] / (2.0 * camera->GetDistance() * std::tan(camera->GetViewAngle() * M_PI / 360.0));
    const double diameter = std::clamp(2.0 * glyphRadius_ * pixelsPerUnit, 3.0, 60.0);
    textActor_->GetProperty()->SetPointSize(static_cast<float>(diameter));
    visualActor_->GetProperty()->SetPointSize(static_cast<float>(diameter));
    selectedActor_->GetProperty()->SetPointSize(static_cast<float>(std::min(90.0, diameter * 1.8)));
    highlightedActor_->GetProperty()->SetPointSize(static_cast<float>(std::min(80.0, diameter * 1.6)));
    declutterLabels(std::clamp(size[1] / 800.0, 1.0, 4.0), diameter);
}

void ConeScene::declutterLabels(double scale, double diameter)
{
    const int tokenFont = static_cast<int>(std::lround(15 * scale));
    for (auto& axisLabel : axisLabels_)
        axisLabel->GetTextProperty()->SetFontSize(static_cast<int>(std::lround(20 * scale)));
    std::vector<QRectF> placed;
    auto place = [&](size_t i) {
        vtkBillboardTextActor3D* l = tokenLabels_[i];
        l->GetTextProperty()->SetFontSize(tokenFont);
        // Above its sphere, clear of it: a label is drawn at its token's depth, so one that overlapped the sphere
        // (the selected token's is 1.8 times the others', and close up every sphere grows) hid behind it.
        const double radius = (i == selectedLabel_ ? 0.9 : 0.5) * diameter;
        const double offset = std::max(14 * scale, radius + 0.6 * tokenFont + 2);
        l->SetDisplayOffset(0, static_cast<int>(std::lround(offset)));
        double* at = l->GetPosition();
        renderer_->SetWorldPoint(at[0], at[1], at[2], 1.0);
        renderer_->WorldToDisplay();
        const double* d = renderer_->GetDisplayPoint();
        // The label's box on screen, from its text length at this font size, with a little air.
        const double width = tokenFont * (0.62 * static_cast<double>(std::strlen(l->GetInput())) + 0.5);
        const QRectF box(d[0] - width / 2, d[1] + offset - tokenFont / 2.0, width, tokenFont + 2.0);
        const bool free = std::none_of(placed.begin(), placed.end(), [&](const QRectF& r) { return r.intersects(box); });
        l->SetVisibility(free);
        if (free)
            placed.push_back(box);
    };
    if (selectedLabel_ < tokenLabelsUsed_)
        place(selectedLabel_);
    for (size_t i = 0; i < tokenLabelsUsed_; ++i)
        if (i != selectedLabel_)
            place(i);
}

vtkBillboardTextActor3D* ConeScene::label(std::vector<vtkSmartPointer<vtkBillboardTextActor3D>>& pool, size_t i)
{
    while (pool.size() <= i) {
        pool.push_back(vtkSmartPointer<vtkBillboardTextActor3D>::New());
        renderer_->AddActor(pool.back());
    }
    pool[i]->SetVisibility(true);
    return pool[i];
}

void ConeScene::update(const PositionTable& table, const SceneOptions& options)
{
    world_ = worldCoordinates(table, options);
    if (world_.rows() > 0) {
        boundsMin_ = world_.colwise().minCoeff().transpose();
        boundsMax_ = world_.colwise().maxCoeff().transpose();
    } else {
        boundsMin_.setZero();
        boundsMax_.setOnes();
    }
    // Visible at full zoom-out, yet well under the unit spacing of text tokens and grid cells.
    const double diagonal = (boundsMax_ - boundsMin_).norm();
    glyphRadius_ = std::clamp(diagonal / 90.0, 0.15, 0.4);

    const double background = options.darkBackground ? 0.10 : 0.98;
    renderer_->SetBackground(background, background, background + (options.darkBackground ? 0.03 : 0.0));

    updateTokens(table, options);
    updateRings(table);
    updateCone(table, options);
    updateAxes();
    updateLabels(table, options);
    for (vtkPolyData* p : {textPoints_.Get(), visualPoints_.Get(), textAxis_.Get(), rings_.Get(), coneLines_.Get(), coneSurface_.Get(),
                           selected_.Get(), highlighted_.Get(), axes_.Get()})
        p->Modified();
}

void ConeScene::updateTokens(const PositionTable& table, const SceneOptions& options)
{
    setPoints(textPoints_, world_, table.textTokens);
    // The text axis: a line through consecutive text tokens.
    vtkNew<vtkCellArray> line;
    if (table.textTokens.size() > 1) {
        line->InsertNextCell(static_cast<int>(table.textTokens.size()));
        for (size_t i = 0; i < table.textTokens.size(); ++i)
            line->InsertCellPoint(static_cast<vtkIdType>(i));
    }
    textAxis_->SetPoints(textPoints_->GetPoints());
    textAxis_->SetLines(line);
    textAxis_->SetVerts(nullptr);

    std::vector<int> visual;
    visual.reserve(static_cast<size_t>(table.visualTokenCount()));
    for (const auto& b : table.blocks)
        for (int i = b.begin; i < b.end(); ++i)
            visual.push_back(i);
    setPoints(visualPoints_, world_, visual);
    // Shaded sphere impostors cost a software renderer seconds per frame at a million tokens; past this
    // many, visual tokens are flat points (what is visible at that density anyway).
    constexpr size_t kShadedPointLimit = 50000;
    visualActor_->GetProperty()->SetRenderPointsAsSpheres(visual.size() <= kShadedPointLimit);

    vtkNew<vtkUnsignedCharArray> colours;
    colours->SetName("colour");
    colours->SetNumberOfComponents(3);
    colours->SetNumberOfTuples(static_cast<vtkIdType>(visual.size()));
    const int selected = options.selectedToken;
    const bool byDistance = options.colour == ColourMode::DistanceToSelected && selected >= 0 && selected < table.size();
    const bool byPatch = options.colour == ColourMode::ImagePatch && options.patchColours.size() == visual.size();
    double maxDistance = 0;
    if (byDistance)
        for (int i : visual)
            maxDistance = std::max(maxDistance, (world_.row(i) - world_.row(selected)).norm());
    double minDistance = maxDistance;
    if (byDistance)
        for (int i : visual)
            minDistance = std::min(minDistance, (world_.row(i) - world_.row(selected)).norm());
    for (size_t k = 0; k < visual.size(); ++k) {
        const int i = visual[k];
        Rgb c;
        if (byPatch) {
            c = {options.patchColours[k][0], options.patchColours[k][1], options.patchColours[k][2]};
        } else if (byDistance) {
            const double d = (world_.row(i) - world_.row(selected)).norm();
            // Distances equal up to rounding (a circle's ring around its centre: std 0) get one colour.
            const bool spread = maxDistance - minDistance > 1e-9 * std::max(1.0, maxDistance);
            c = viridis(spread ? (d - minDistance) / (maxDistance - minDistance) : 0.5);
        } else {
            const int rows = table.layout.segments[static_cast<size_t>(table.segment[static_cast<size_t>(i)])].rows;
            const int cols = table.layout.segments[static_cast<size_t>(table.segment[static_cast<size_t>(i)])].cols;
            c = rowColColour(table.row[static_cast<size_t>(i)], rows, table.col[static_cast<size_t>(i)], cols);
        }
        colours->SetTypedTuple(static_cast<vtkIdType>(k), c.data());
    }
    visualPoints_->GetPointData()->SetScalars(colours);

    std::vector<int> sel;
    if (selected >= 0 && selected < table.size())
        sel.push_back(selected);
    setPoints(selected_, world_, sel);
    std::vector<int> marked;
    for (int t : options.highlighted)
        if (t >= 0 && t < table.size())
            marked.push_back(t);
    setPoints(highlighted_, world_, marked);
}

void ConeScene::updateRings(const PositionTable& table)
{
    constexpr int kSegments = 160;
    vtkNew<vtkPoints> points;
    vtkNew<vtkCellArray> lines;
    for (const geometry::Ring& r : table.rings) {
        const vtkIdType first = points->GetNumberOfPoints();
        for (int s = 0; s < kSegments; ++s) {
            points->InsertNextPoint(geometry::reverseAxes(r.at(2 * M_PI * s / kSegments)).data());
        }
        lines->InsertNextCell(kSegments + 1);
        for (int s = 0; s <= kSegments; ++s)
            lines->InsertCellPoint(first + s % kSegments);
    }
    rings_->SetPoints(points);
    rings_->SetLines(lines);
}

void ConeScene::updateCone(const PositionTable& table, const SceneOptions& options)
{
    vtkNew<vtkPoints> linePoints;
    vtkNew<vtkCellArray> lines;
    vtkNew<vtkPoints> surfacePoints;
    vtkNew<vtkCellArray> triangles;
    const int apexToken = options.selectedToken;
    if (apexToken >= 0 && apexToken < table.size() && table.isText(apexToken)) {
        const Eigen::RowVector3d apex = world_.row(apexToken);
        if (options.showConeLines) {
            // Each line crosses the view: a million of them is seconds of rasterising per frame. Past
            // kMaxConeLines, every k-th visual token of each block keeps the cone's shape.
            constexpr int kMaxConeLines = 4096;
            const int stride = std::max(1, (table.visualTokenCount() + kMaxConeLines - 1) / kMaxConeLines);
            linePoints->InsertNextPoint(apex.data());
            for (const auto& b : table.blocks)
                for (int i = b.begin; i < b.end(); i += stride) {
                    const vtkIdType id = linePoints->InsertNextPoint(world_(i, 0), world_(i, 1), world_(i, 2));
                    const vtkIdType cell[2] = {0, id};
                    lines->InsertNextCell(2, cell);
                }
        }
        if (options.showConeSurface) {
            constexpr int kSegments = 96;
            for (const geometry::Ring& r : table.rings) {
                const vtkIdType apexId = surfacePoints->InsertNextPoint(apex.data());
                for (int s = 0; s < kSegments; ++s) {
                    surfacePoints->InsertNextPoint(geometry::reverseAxes(r.at(2 * M_PI * s / kSegments)).data());
                }
                for (int s = 0; s < kSegments; ++s) {
                    const vtkIdType tri[3] = {apexId, apexId + 1 + s, apexId + 1 + (s + 1) % kSegments};
                    triangles->InsertNextCell(3, tri);
                }
            }
        }
    }
    coneLines_->SetPoints(linePoints);
    coneLines_->SetLines(lines);
    coneSurface_->SetPoints(surfacePoints);
    coneSurface_->SetPolys(triangles);
}

void ConeScene::updateAxes()
{
    // Three arrows from outside the scene's low corner (clear of an image's ring in the default view), as long as a quarter of its largest extent.
    const Eigen::Vector3d extent = boundsMax_ - boundsMin_;
    const double length = std::max(2.0, 0.25 * extent.maxCoeff());
    const Eigen::Vector3d origin = boundsMin_ - Eigen::Vector3d::Constant(0.14 * extent.maxCoeff() + glyphRadius_ * 3);
    vtkNew<vtkPoints> points;
    vtkNew<vtkCellArray> lines;
    points->InsertNextPoint(origin.data());
    for (int axis = 0; axis < 3; ++axis) {
        Eigen::Vector3d end = origin;
        end[axis] += length;
        const vtkIdType id = points->InsertNextPoint(end.data());
        const vtkIdType cell[2] = {0, id};
        lines->InsertNextCell(2, cell);
    }
    axes_->SetPoints(points);
    axes_->SetLines(lines);

    const bool dark = renderer_->GetBackground()[0] < 0.5;
    const char* names[3] = {"w", "h", "t"};
    for (int axis = 0; axis < 3; ++axis) {
        Eigen::Vector3d at = origin;
        at[axis] += length * 1.12;
        styleLabel(axisLabels_[static_cast<size_t>(axis)], names[axis], at, 20, true, dark);
    }
}

void ConeScene::updateLabels(const PositionTable& table, const SceneOptions& options)
{
    // Labels are pooled: a label whose text and place did not change costs nothing to redraw.
    size_t used = 0;
    selectedLabel_ = SIZE_MAX;
    if (options.showLabels && !table.textTokens.empty()) {
        // About 24 labels: every k-th text token, always the last and the selected. Each label is a draw of its
        // own (a textured billboard), and on a software GL each costs a draw (docs/SPEED.md).
        const size_t step = (table.textTokens.size() + 23) / 24;
        const bool dark = renderer_->GetBackground()[0] < 0.5;
        for (size_t k = 0; k < table.textTokens.size(); ++k) {
            const int token = table.textTokens[k];
            if (k % step != 0 && k + 1 != table.textTokens.size() && token != options.selectedToken)
                continue;
            if (token == options.selectedToken)
                selectedLabel_ = used;
            vtkBillboardTextActor3D* l = label(tokenLabels_, used++);
            styleLabel(l, std::to_string(token).c_str(), world_.row(token).transpose(), 15, false, dark);
            l->SetDisplayOffset(0, 14); // above the token, clear of the axis line (scaled in declutterLabels)
        }
    }
    for (size_t i = used; i < tokenLabels_.size(); ++i)
        tokenLabels_[i]->SetVisibility(false);
    tokenLabelsUsed_ = used;
}

session::CameraState ConeScene::cameraState() const
{
    vtkCamera* c = renderer_->GetActiveCamera();
    session::CameraState s;
    c->GetPosition(s.position.data());
    c->GetFocalPoint(s.focalPoint.data());
    c->GetViewUp(s.viewUp.data());
    s.viewAngle = c->GetViewAngle();
    return s;
}

void ConeScene::setCameraState(const session::CameraState& s)
{
    vtkCamera* c = renderer_->GetActiveCamera();
    c->SetPosition(s.position.data());
    c->SetFocalPoint(s.focalPoint.data());
    c->SetViewUp(s.viewUp.data());
    c->SetViewAngle(s.viewAngle);
    renderer_->ResetCameraClippingRange();
}

void ConeScene::applyCamera(CameraPreset preset)
{
    vtkCamera* camera = renderer_->GetActiveCamera();
    const Eigen::Vector3d centre = 0.5 * (boundsMin_ + boundsMax_);
    // Frame everything around the text axis a: it runs left to right on screen, q is screen-up.
    const Eigen::Vector3d a = Eigen::Vector3d(1, 1, 1).normalized();
    const Eigen::Vector3d p = Eigen::Vector3d(1, -1, 0).normalized();
    const Eigen::Vector3d q = Eigen::Vector3d(-1, -1, 2).normalized();
    Eigen::Vector3d direction = p, up = q;
    switch (preset) {
    case CameraPreset::Isometric:
        // 50 degrees round from the side view: a ring orthogonal to the text axis reads as an open ellipse (3:4)
        // and the axis still runs left to right. 35 degrees showed the ring nearly edge-on; lifting the camera
        // tilted the text axis and put the axis arrows over the ring.
        direction = (std::cos(0.87) * p + std::sin(0.87) * a).normalized();
        break;
    case CameraPreset::DownTextAxis: // rings as full circles, the text axis as a point
        direction = a;
        up = q;
        break;
    case CameraPreset::Side: // rings edge-on: the orthogonality to the axis shows as a right angle
        direction = p;
        break;
    }
    camera->SetFocalPoint(centre.data());
    const Eigen::Vector3d position = centre + direction * std::max(1.0, (boundsMax_ - boundsMin_).norm());
    camera->SetPosition(position.data());
    camera->SetViewUp(up.data());
    camera->OrthogonalizeViewUp();
    renderer_->ResetCamera();
    camera->Zoom(1.1); // ResetCamera fits a sphere around the bounds; a box needs a little less
    renderer_->ResetCameraClippingRange();
}

int ConeScene::pickToken(double x, double y, double maxPixels) const
{
    int best = -1;
    double bestDistance = maxPixels * maxPixels;
    vtkNew<vtkCoordinate> coordinate;
    coordinate->SetCoordinateSystemToWorld();
    for (Eigen::Index i = 0; i < world_.rows(); ++i) {
        coordinate->SetValue(world_(i, 0), world_(i, 1), world_(i, 2));
        const double* d = coordinate->GetComputedDoubleDisplayValue(renderer_);
        const double dx = d[0] - x, dy = d[1] - y;
        if (dx * dx + dy * dy < bestDistance) {
            bestDistance = dx * dx + dy * dy;
            best = static_cast<int>(i);
        }
    }
    return best;
}

} // namespace ropescope::views

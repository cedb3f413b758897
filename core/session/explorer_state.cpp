#include "explorer_state.h"

#include "geometry/errors.h"
#include "io/scheme_codec.h"

#include <QJsonArray>

#include <cmath>

namespace ropescope::session {
using namespace geometry;

namespace {

QJsonArray toArray(const std::array<double, 3>& v)
{
    return {v[0], v[1], v[2]};
}

} // namespace

SchemeParams ExplorerState::defaultParams()
{
    SchemeParams p;
    p.kind = SchemeKind::Circle;
    return p;
}

std::optional<AgeSchedule> ExplorerState::ageSchedule() const
{
    if (age.empty())
        return std::nullopt;
    return parseAgeSchedule(age, ageLayers);
}

SchemeParams ExplorerState::effectiveParams() const
{
    const auto schedule = ageSchedule();
    return schedule ? layerParams(params, *schedule, layer) : params;
}

PositionTable ExplorerState::buildTable() const
{
    return buildPositionTable(parseLayout(layout), effectiveParams());
}

QJsonObject ExplorerState::toJson() const
{
    QJsonObject o;
    o["format"] = "ropescope-session-1";
    o["layout"] = QString::fromStdString(layout);
    io::writeSchemeParams(o, params);
    o["age"] = QString::fromStdString(age);
    o["age_layers"] = ageLayers;
    o["layer"] = layer;
    o["selected_token"] = selectedToken;
    o["colour"] = QString::fromStdString(colourMode);
    o["cone_lines"] = showConeLines;
    o["cone_surface"] = showConeSurface;
    o["labels"] = showLabels;
    o["dark"] = darkBackground;
    o["projection"] = QString::fromStdString(projection);
    o["camera"] = QString::fromStdString(camera);
    if (cameraState) {
        o["camera_state"] = QJsonObject{{"position", toArray(cameraState->position)},
                                        {"focal_point", toArray(cameraState->focalPoint)},
                                        {"view_up", toArray(cameraState->viewUp)},
                                        {"view_angle", cameraState->viewAngle}};
    }
    if (!imagePath.isEmpty())
        o["image"] = imagePath;
    return o;
}

ExplorerState ExplorerState::fromJson(const QJsonObject& o)
{
    ExplorerState s;
    const io::JsonFields f(o, "session");
    s.layout = f.text("layout", s.layout);
    s.params = io::readSchemeParams(f, s.params);
    s.age = f.text("age", "");
    s.ageLayers = f.integer("age_layers", s.ageLayers);
    s.layer = f.integer("layer", s.layer);
    s.selectedToken = f.integer("selected_token", s.selectedToken);
    s.colourMode = f.text("colour", s.colourMode);
    if (s.colourMode != "rowcol" && s.colourMode != "patch" && s.colourMode != "distance")
        f.bad("colour", "must be rowcol, patch or distance");
    s.showConeLines = f.boolean("cone_lines", s.showConeLines);
    s.showConeSurface = f.boolean("cone_surface", s.showConeSurface);
    s.showLabels = f.boolean("labels", s.showLabels);
    s.darkBackground = f.boolean("dark", s.darkBackground);
    s.projection = f.text("projection", s.projection);
    s.camera = f.text("camera", s.camera);
    if (s.camera != "isometric" && s.camera != "axis" && s.camera != "side")
        f.bad("camera", "must be isometric, axis or side");
    if (o.contains("camera_state")) {
        if (!o["camera_state"].isObject())
            f.bad("camera_state", "must be an object");
        const io::JsonFields c(o["camera_state"].toObject(), "session: camera_state");
        CameraState cs;
        cs.position = c.triple("position", {});
        cs.focalPoint = c.triple("focal_point", {});
        cs.viewUp = c.triple("view_up", {0, 1, 0});
        cs.viewAngle = c.number("view_angle", 30.0);
        s.cameraState = cs;
    }
    if (o.contains("image"))
        s.imagePath = QString::fromStdString(f.text("image", ""));
    // A state that cannot be drawn is as bad as unreadable JSON: report the parameter now.
    s.buildTable();
    return s;
}

} // namespace ropescope::session

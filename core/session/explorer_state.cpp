#include "core/session/explorer_state.h"

#include "core/geometry/errors.h"
#include "core/io/scheme_codec.h"

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
    if (!highlighted.empty()) {
        QJsonArray marked;
        for (int t : highlighted)
            marked.append(t);
        o["highlighted"] = marked;
    }
    o["colour"] = colourModeName(colourMode);
    o["cone_lines"] = showConeLines;
    o["cone_surface"] = showConeSurface;
    o["labels"] = showLabels;
    o["dark"] = darkBackground;
    o["projection"] = QString::fromStdString(projectionName(projection));
    o["camera"] = cameraPresetName(camera);
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
    if (o.contains("highlighted")) {
        const QJsonArray marked = o["highlighted"].toArray();
        constexpr qsizetype kMaxHighlighted = 4096;
        if (!o["highlighted"].isArray() || marked.size() > kMaxHighlighted)
            f.bad("highlighted", "must be a list of at most 4096 token indices");
        for (const QJsonValue& v : marked) {
            if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() > 1e8 || v.toDouble() != std::floor(v.toDouble()))
                f.bad("highlighted", "must hold token indices (whole numbers from 0)");
            s.highlighted.push_back(v.toInt());
        }
    }
    const auto colour = colourModeFromName(f.text("colour", colourModeName(s.colourMode)));
    if (!colour)
        f.bad("colour", "must be rowcol, patch or distance");
    s.colourMode = *colour;
    s.showConeLines = f.boolean("cone_lines", s.showConeLines);
    s.showConeSurface = f.boolean("cone_surface", s.showConeSurface);
    s.showLabels = f.boolean("labels", s.showLabels);
    s.darkBackground = f.boolean("dark", s.darkBackground);
    const auto projection = projectionFromName(f.text("projection", projectionName(s.projection)));
    if (!projection)
        f.bad("projection", "must be hadamard or three component indices 0-3, e.g. 0,1,2");
    s.projection = *projection;
    const auto camera = cameraPresetFromName(f.text("camera", cameraPresetName(s.camera)));
    if (!camera)
        f.bad("camera", "must be isometric, axis or side");
    s.camera = *camera;
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
    // A state that cannot be drawn is as bad as unreadable JSON: report the parameter now. A scheme file is
    // named, not loaded (the application loads and trusts it): the rest is checked under its base scheme.
    if (s.params.custom) {
        ExplorerState rest = s;
        rest.params.custom.reset();
        rest.buildTable();
    } else {
        s.buildTable();
    }
    return s;
}

} // namespace ropescope::session

#include "explorer_state.h"

#include "geometry/errors.h"

#include <QJsonArray>

#include <cmath>

namespace ropescope::session {
using namespace geometry;

namespace {

[[noreturn]] void bad(const char* key, const std::string& why)
{
    throw InvalidInput(std::string("session: '") + key + "' " + why);
}

double number(const QJsonObject& o, const char* key, double fallback)
{
    if (!o.contains(key))
        return fallback;
    if (!o[key].isDouble() || !std::isfinite(o[key].toDouble()))
        bad(key, "must be a number");
    return o[key].toDouble();
}

int integer(const QJsonObject& o, const char* key, int fallback)
{
    const double v = number(o, key, fallback);
    if (v != std::floor(v) || std::abs(v) > 1e9)
        bad(key, "must be a whole number");
    return static_cast<int>(v);
}

bool boolean(const QJsonObject& o, const char* key, bool fallback)
{
    if (!o.contains(key))
        return fallback;
    if (!o[key].isBool())
        bad(key, "must be true or false");
    return o[key].toBool();
}

std::string text(const QJsonObject& o, const char* key, const std::string& fallback)
{
    if (!o.contains(key))
        return fallback;
    if (!o[key].isString())
        bad(key, "must be a string");
    return o[key].toString().toStdString();
}

std::array<double, 3> triple(const QJsonObject& o, const char* key, std::array<double, 3> fallback)
{
    if (!o.contains(key))
        return fallback;
    const QJsonArray a = o[key].toArray();
    if (!o[key].isArray() || a.size() != 3)
        bad(key, "must be an array of 3 numbers");
    std::array<double, 3> out{};
    for (int i = 0; i < 3; ++i) {
        if (!a[i].isDouble() || !std::isfinite(a[i].toDouble()))
            bad(key, "must be an array of 3 numbers");
        out[static_cast<size_t>(i)] = a[i].toDouble();
    }
    return out;
}

QJsonArray toArray(const std::array<double, 3>& v)
{
    return {v[0], v[1], v[2]};
}

const char* radiusModeName(RadiusMode m)
{
    switch (m) {
    case RadiusMode::Fixed: return "fixed";
    case RadiusMode::AutoPaper: return "auto";
    case RadiusMode::AutoCode: return "code-auto";
    }
    return "fixed";
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
    o["scheme"] = schemeName(params.kind);
    o["alpha"] = params.circle.alpha;
    o["radius_mode"] = radiusModeName(params.circle.radiusMode);
    o["radius"] = params.circle.radius;
    o["text_vector"] = toArray({params.circle.textVector.x(), params.circle.textVector.y(), params.circle.textVector.z()});
    o["stride"] = params.circle.stride;
    o["temporal"] = params.temporal.mode == TemporalParams::Mode::Qwen25VL ? "qwen25vl" : "qwen2vl";
    o["second_per_grid"] = params.temporal.secondPerGrid;
    o["tokens_per_second"] = params.temporal.tokensPerSecond;
    o["theta"] = params.rotary.theta;
    o["head_dim"] = params.rotary.headDim;
    if (params.allocationKind)
        o["allocation"] = allocationKindName(*params.allocationKind);
    if (params.temporalStride)
        o["temporal_stride"] = *params.temporalStride;
    o["visual_stride"] = params.visualStride;
    o["position_scale"] = toArray({params.positionScale.x(), params.positionScale.y(), params.positionScale.z()});
    o["ntk_factor"] = params.ntkFactor;
    o["kv_heads"] = params.rotary.heads;
    if (!params.sections.empty()) {
        QJsonArray s;
        for (int v : params.sections)
            s.append(v);
        o["sections"] = s;
    }
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
    s.layout = text(o, "layout", s.layout);
    const std::string scheme = text(o, "scheme", schemeName(s.params.kind));
    const auto kind = schemeFromName(scheme);
    if (!kind)
        bad("scheme", "is not a known scheme: " + scheme);
    s.params.kind = *kind;
    s.params.circle.alpha = number(o, "alpha", s.params.circle.alpha);
    const std::string mode = text(o, "radius_mode", "fixed");
    if (mode == "fixed")
        s.params.circle.radiusMode = RadiusMode::Fixed;
    else if (mode == "auto")
        s.params.circle.radiusMode = RadiusMode::AutoPaper;
    else if (mode == "code-auto")
        s.params.circle.radiusMode = RadiusMode::AutoCode;
    else
        bad("radius_mode", "must be fixed, auto or code-auto");
    s.params.circle.radius = number(o, "radius", s.params.circle.radius);
    const auto v = triple(o, "text_vector", {1, 1, 1});
    s.params.circle.textVector = Eigen::Vector3d(v[0], v[1], v[2]);
    s.params.circle.stride = number(o, "stride", s.params.circle.stride);
    const std::string temporal = text(o, "temporal", "qwen2vl");
    if (temporal != "qwen2vl" && temporal != "qwen25vl")
        bad("temporal", "must be qwen2vl or qwen25vl");
    s.params.temporal.mode = temporal == "qwen25vl" ? TemporalParams::Mode::Qwen25VL : TemporalParams::Mode::Qwen2VL;
    s.params.temporal.secondPerGrid = number(o, "second_per_grid", s.params.temporal.secondPerGrid);
    s.params.temporal.tokensPerSecond = number(o, "tokens_per_second", s.params.temporal.tokensPerSecond);
    s.params.rotary.theta = number(o, "theta", s.params.rotary.theta);
    s.params.rotary.headDim = integer(o, "head_dim", s.params.rotary.headDim);
    if (o.contains("allocation")) {
        const std::string a = text(o, "allocation", "");
        const auto allocation = allocationKindFromName(a);
        if (!allocation)
            bad("allocation", "must be sectioned, interleaved, interleaved-mrope, hw-alternating, distributed or per-head");
        s.params.allocationKind = allocation;
    }
    if (o.contains("temporal_stride"))
        s.params.temporalStride = number(o, "temporal_stride", 2.0);
    s.params.visualStride = number(o, "visual_stride", s.params.visualStride);
    const auto scale = triple(o, "position_scale", {4, 8, 8});
    s.params.positionScale = Eigen::Vector3d(scale[0], scale[1], scale[2]);
    s.params.ntkFactor = number(o, "ntk_factor", s.params.ntkFactor);
    s.params.rotary.heads = integer(o, "kv_heads", s.params.rotary.heads);
    if (o.contains("sections")) {
        if (!o["sections"].isArray() || o["sections"].toArray().size() > 8)
            bad("sections", "must be an array of up to 8 whole numbers");
        for (const QJsonValue& x : o["sections"].toArray()) {
            if (!x.isDouble() || x.toDouble() != std::floor(x.toDouble()) || std::abs(x.toDouble()) > 1e6)
                bad("sections", "must be an array of whole numbers");
            s.params.sections.push_back(x.toInt());
        }
    }
    s.age = text(o, "age", "");
    s.ageLayers = integer(o, "age_layers", s.ageLayers);
    s.layer = integer(o, "layer", s.layer);
    s.selectedToken = integer(o, "selected_token", s.selectedToken);
    s.colourMode = text(o, "colour", s.colourMode);
    if (s.colourMode != "rowcol" && s.colourMode != "patch" && s.colourMode != "distance")
        bad("colour", "must be rowcol, patch or distance");
    s.showConeLines = boolean(o, "cone_lines", s.showConeLines);
    s.showConeSurface = boolean(o, "cone_surface", s.showConeSurface);
    s.showLabels = boolean(o, "labels", s.showLabels);
    s.darkBackground = boolean(o, "dark", s.darkBackground);
    s.projection = text(o, "projection", s.projection);
    s.camera = text(o, "camera", s.camera);
    if (s.camera != "isometric" && s.camera != "axis" && s.camera != "side")
        bad("camera", "must be isometric, axis or side");
    if (o.contains("camera_state")) {
        if (!o["camera_state"].isObject())
            bad("camera_state", "must be an object");
        const QJsonObject c = o["camera_state"].toObject();
        CameraState cs;
        cs.position = triple(c, "position", {});
        cs.focalPoint = triple(c, "focal_point", {});
        cs.viewUp = triple(c, "view_up", {0, 1, 0});
        cs.viewAngle = number(c, "view_angle", 30.0);
        s.cameraState = cs;
    }
    if (o.contains("image"))
        s.imagePath = QString::fromStdString(text(o, "image", ""));
    // A state that cannot be drawn is as bad as unreadable JSON: report the parameter now.
    s.buildTable();
    return s;
}

} // namespace ropescope::session

#include "core/io/scheme_codec.h"

#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"

#include <QJsonArray>

#include <cmath>

namespace ropescope::io {
using namespace geometry;

// The names are the Choice rows' (core/geometry/scheme_parameters.cpp).
const char* radiusModeName(RadiusMode mode)
{
    return findSchemeParameter("radius_mode")->choices[static_cast<int>(mode)];
}

std::optional<RadiusMode> radiusModeFromName(const std::string& name)
{
    const auto index = choiceIndex(*findSchemeParameter("radius_mode"), name);
    return index ? std::optional<RadiusMode>(static_cast<RadiusMode>(static_cast<int>(*index))) : std::nullopt;
}

const char* temporalModeName(TemporalParams::Mode mode)
{
    return findSchemeParameter("temporal")->choices[static_cast<int>(mode)];
}

std::optional<TemporalParams::Mode> temporalModeFromName(const std::string& name)
{
    const auto index = choiceIndex(*findSchemeParameter("temporal"), name);
    return index ? std::optional<TemporalParams::Mode>(static_cast<TemporalParams::Mode>(static_cast<int>(*index))) : std::nullopt;
}

void JsonFields::bad(const char* key, const std::string& why) const
{
    throw InvalidInput(context_ + ": '" + key + "' " + why);
}

double JsonFields::number(const char* key, double fallback) const
{
    if (!o_.contains(key))
        return fallback;
    if (!o_[key].isDouble() || !std::isfinite(o_[key].toDouble()))
        bad(key, "must be a number");
    return o_[key].toDouble();
}

int JsonFields::integer(const char* key, int fallback) const
{
    const double v = number(key, fallback);
    if (v != std::floor(v) || std::abs(v) > 1e9)
        bad(key, "must be a whole number");
    return static_cast<int>(v);
}

bool JsonFields::boolean(const char* key, bool fallback) const
{
    if (!o_.contains(key))
        return fallback;
    if (!o_[key].isBool())
        bad(key, "must be true or false");
    return o_[key].toBool();
}

std::string JsonFields::text(const char* key, const std::string& fallback) const
{
    if (!o_.contains(key))
        return fallback;
    if (!o_[key].isString())
        bad(key, "must be a string");
    return o_[key].toString().toStdString();
}

std::array<double, 3> JsonFields::triple(const char* key, std::array<double, 3> fallback) const
{
    if (!o_.contains(key))
        return fallback;
    const QJsonArray a = o_[key].toArray();
    if (!o_[key].isArray() || a.size() != 3)
        bad(key, "must be an array of 3 numbers");
    std::array<double, 3> out{};
    for (int i = 0; i < 3; ++i) {
        if (!a[i].isDouble() || !std::isfinite(a[i].toDouble()))
            bad(key, "must be an array of 3 numbers");
        out[static_cast<size_t>(i)] = a[i].toDouble();
    }
    return out;
}

QJsonValue parameterJson(const SchemeParameter& row, const SchemeParams& p)
{
    switch (row.type) {
    case SchemeParameter::Type::Number: return row.get(p);
    case SchemeParameter::Type::Choice: return choiceName(row, p);
    case SchemeParameter::Type::Flag: return row.get(p) != 0;
    case SchemeParameter::Type::Vector: {
        const std::array<double, 3> v = row.getVector(p);
        return QJsonArray{v[0], v[1], v[2]};
    }
    }
    return {};
}

namespace {

// A row's value from a file that holds its key.
void readParameter(const JsonFields& f, const SchemeParameter& row, SchemeParams& p)
{
    switch (row.type) {
    case SchemeParameter::Type::Number: row.set(p, f.number(row.key, row.get(p))); return;
    case SchemeParameter::Type::Choice: {
        const auto index = choiceIndex(row, f.text(row.key, ""));
        if (!index)
            f.bad(row.key, "must be " + choiceList(row));
        row.set(p, *index);
        return;
    }
    case SchemeParameter::Type::Flag: row.set(p, f.boolean(row.key, row.get(p) != 0) ? 1 : 0); return;
    case SchemeParameter::Type::Vector: row.setVector(p, f.triple(row.key, row.getVector(p))); return;
    }
}

// A field holding one of an enum's names (from the table above); missing keeps `current`.
template <class Enum>
Enum named(const JsonFields& f, const char* key, Enum current, const char* (*name)(Enum),
           std::optional<Enum> (*fromName)(const std::string&), const char* expected)
{
    const auto value = fromName(f.text(key, name(current)));
    if (!value)
        f.bad(key, std::string("must be ") + expected);
    return *value;
}

} // namespace

void writeSchemeParams(QJsonObject& o, const SchemeParams& p)
{
    o["scheme"] = schemeName(p.kind);
    // The scheme parameters, from their table (core/geometry/scheme_parameters.cpp); the rotary box below.
    for (const SchemeParameter& row : schemeParameters())
        if (!row.written || row.written(p))
            o[QString::fromUtf8(row.key)] = parameterJson(row, p);
    o["theta"] = p.rotary.theta;
    o["head_dim"] = p.rotary.headDim;
    // Written only where they differ from the scheme's own (files of full, half-split rotary stay as they were).
    const RotaryConfig own = schemeRotaryDefaults(p.kind);
    if (p.rotary.partial != own.partial)
        o["partial_rotary"] = p.rotary.partial;
    if (p.rotary.pairing != own.pairing)
        o["pairing"] = rotaryPairingName(p.rotary.pairing);
    if (p.rotary.proportional) // Gemma 4's full layers
        o["proportional"] = true;
    if (p.rotary.linearFactor != 1.0) // Gemma 3's full layers
        o["linear_factor"] = p.rotary.linearFactor;
    o["kv_heads"] = p.rotary.heads;
    if (p.allocationKind)
        o["allocation"] = allocationKindName(*p.allocationKind);
    QJsonArray sections;
    for (int s : p.sections)
        sections.append(s);
    o["sections"] = sections;
    if (p.videoForm)
        o["video_form"] = videoFormName(*p.videoForm);
    if (p.custom)
        o["scheme_file"] = customSchemeJson(*p.custom);
}

QJsonObject customSchemeJson(const CustomSchemeRef& ref)
{
    QJsonObject params;
    for (const auto& [name, value] : ref.values)
        params[QString::fromStdString(name)] = value;
    QJsonObject o{{"path", QString::fromStdString(ref.file)}, {"sha256", QString::fromStdString(ref.sha256)}, {"params", params}};
    if (ref.importsFolder)
        o["imports_folder"] = true;
    return o;
}

SchemeParams readSchemeParams(const JsonFields& f, SchemeParams p)
{
    const std::string scheme = f.text("scheme", schemeName(p.kind));
    const auto kind = schemeFromName(scheme);
    if (!kind)
        f.bad("scheme", "is not a known scheme: " + scheme + " (expected " + schemeNameList() + ")");
    p.kind = *kind;
    for (const SchemeParameter& row : schemeParameters())
        if (f.has(row.key))
            readParameter(f, row, p);
    // Missing: the scheme's own when the file names its scheme (partial and pairing are written only where
    // they differ from it), else as it was.
    const RotaryConfig own = f.has("scheme") ? schemeRotaryDefaults(p.kind) : p.rotary;
    p.rotary.theta = f.number("theta", own.theta);
    p.rotary.headDim = f.integer("head_dim", p.rotary.headDim);
    p.rotary.partial = f.number("partial_rotary", own.partial);
    p.rotary.pairing = named(f, "pairing", own.pairing, rotaryPairingName, rotaryPairingFromName, "half or adjacent");
    p.rotary.heads = f.integer("kv_heads", p.rotary.heads);
    // Written only where set (Gemma's full layers): missing is off / 1 when the file names its scheme, else as it was.
    p.rotary.proportional = f.boolean("proportional", f.has("scheme") ? false : p.rotary.proportional);
    p.rotary.linearFactor = f.number("linear_factor", f.has("scheme") ? 1.0 : p.rotary.linearFactor);
    if (!(p.rotary.linearFactor > 0) || !std::isfinite(p.rotary.linearFactor))
        f.bad("linear_factor", "must be a positive number");
    if (f.has("allocation")) {
        const std::string a = f.text("allocation", "");
        if (a == "default")
            p.allocationKind.reset();
        else if (const auto allocation = allocationKindFromName(a))
            p.allocationKind = allocation;
        else
            f.bad("allocation",
                  "must be default, sectioned, interleaved, interleaved-mrope, hw-alternating, distributed, per-head or hw-interleaved");
    }
    if (f.has("sections")) {
        const QJsonValue s = f.object()["sections"];
        if (!s.isArray() || s.toArray().size() > 8)
            f.bad("sections", "must be an array of up to 8 whole numbers");
        p.sections.clear();
        for (const QJsonValue& x : s.toArray()) {
            if (!x.isDouble() || x.toDouble() != std::floor(x.toDouble()) || std::abs(x.toDouble()) > 1e6)
                f.bad("sections", "must be an array of whole numbers");
            p.sections.push_back(x.toInt());
        }
    }
    if (f.has("video_form")) {
        const std::string form = f.text("video_form", "");
        if (form == "default")
            p.videoForm.reset();
        else if (const auto named = videoFormFromName(form))
            p.videoForm = named;
        else
            f.bad("video_form", "must be default, grid or split");
    }
    if (f.has("scheme_file")) {
        // The file is named, not loaded: the application loads it (and, for Python, asks whether to trust it).
        const QJsonObject file = f.object()["scheme_file"].toObject();
        const QString path = file["path"].toString();
        if (path.isEmpty() || path.size() > 4096)
            f.bad("scheme_file", "must name the scheme's file in \"path\"");
        CustomSchemeRef ref;
        ref.file = path.toStdString();
        ref.sha256 = file["sha256"].toString().left(64).toStdString();
        if (file.contains("imports_folder") && !file["imports_folder"].isBool())
            f.bad("scheme_file", "imports_folder must be true or false");
        ref.importsFolder = file["imports_folder"].toBool();
        const QJsonObject params = file["params"].toObject();
        if (params.size() > 64)
            f.bad("scheme_file", "has more than 64 params");
        for (auto it = params.begin(); it != params.end(); ++it) {
            if (!it.value().isDouble() || !std::isfinite(it.value().toDouble()))
                f.bad("scheme_file", "param " + it.key().toStdString() + " must be a number");
            ref.values[it.key().toStdString()] = it.value().toDouble();
        }
        p.custom = std::move(ref);
    } else {
        p.custom.reset();
    }
    return p;
}

} // namespace ropescope::io

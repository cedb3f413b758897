// The scheme parameter table (scheme_parameters.h). A new parameter is one row here and a field in
// SchemeParams; test_scheme_parameters checks each row against the struct (a change of the field is seen by
// operator==, survives the session codec, is reset by placementParams for schemes that do not read it).
#include "core/geometry/scheme_parameters.h"

#include "core/geometry/errors.h"

#include <algorithm>
#include <cmath>

namespace ropescope::geometry {
namespace {

using T = SchemeParameter::Type;

bool circle(SchemeKind k)
{
    return k == SchemeKind::Circle;
}
bool mropeFamily(SchemeKind k)
{
    return k == SchemeKind::Mrope || k == SchemeKind::Compact;
}
bool v2pe(SchemeKind k)
{
    return k == SchemeKind::V2pe;
}
bool videoRopePlus(SchemeKind k)
{
    return k == SchemeKind::VideoRopePlus;
}
bool mmRope(SchemeKind k)
{
    return k == SchemeKind::MmRope;
}
bool xdRope(SchemeKind k)
{
    return k == SchemeKind::XdRope;
}

// A Number row over one double member (or a member of a member).
#define ROPESCOPE_NUMBER(field)                                                                                                            \
    [](const SchemeParams& p) { return p.field; }, [](SchemeParams& p, double v) { p.field = v; }, ROPESCOPE_SAME(field)
// Every row: compare and copy the member.
#define ROPESCOPE_SAME(field)                                                                                                              \
    [](const SchemeParams& a, const SchemeParams& b) { return a.field == b.field; },                                                       \
        [](SchemeParams& to, const SchemeParams& from) { to.field = from.field; }
// A Choice row over an enum member whose order is the row's names.
#define ROPESCOPE_CHOICE(field, Enum, names)                                                                                               \
    [](const SchemeParams& p) { return static_cast<double>(p.field); },                                                                    \
        [](SchemeParams& p, double v) { p.field = static_cast<Enum>(static_cast<int>(v)); }, ROPESCOPE_SAME(field), nullptr, nullptr,      \
        names
// A Flag row over a bool member.
#define ROPESCOPE_FLAG(field)                                                                                                              \
    [](const SchemeParams& p) { return p.field ? 1.0 : 0.0; }, [](SchemeParams& p, double v) { p.field = v != 0; }, ROPESCOPE_SAME(field)
// A Vector row over an Eigen::Vector3d member.
#define ROPESCOPE_VECTOR(field)                                                                                                            \
    nullptr, nullptr, ROPESCOPE_SAME(field), nullptr, nullptr, nullptr,                                                                    \
        [](const SchemeParams& p) {                                                                                                        \
            return std::array<double, 3>{p.field.x(), p.field.y(), p.field.z()};                                                           \
        },                                                                                                                                 \
        [](SchemeParams& p, const std::array<double, 3>& v) { p.field = Eigen::Vector3d(v[0], v[1], v[2]); }

bool qwen25Time(const SchemeParams& p)
{
    return p.temporal.mode == TemporalParams::Mode::Qwen25VL;
}

const char* const kRadiusModes[] = {"fixed", "auto", "code-auto", nullptr}; // RadiusMode's order
const char* const kTemporalModes[] = {"qwen2vl", "qwen25vl", nullptr};      // TemporalParams::Mode's order

const SchemeParams kDefaults;

std::vector<SchemeParameter> kParameters = {
    {"alpha", "alpha", "alpha", "Circle-RoPE angle mixing: alpha*SA + (1-alpha)*GA, in [0,1] (default 0.5).", "A", T::Number,
     kDefaults.circle.alpha, 0, 1, 1, false, "must be in [0, 1]", circle, ROPESCOPE_NUMBER(circle.alpha)},
    // --radius R | auto-K | code-auto-K sets both radius rows (geometry_options.cpp): no help of their own here.
    {"radius_mode", "radius", "radius mode", "", "", T::Choice, 0, 0, 0, 0, false, "", circle,
     ROPESCOPE_CHOICE(circle.radiusMode, RadiusMode, kRadiusModes)},
    // The message names R or k by the radius mode: validate() checks the range (schemes.cpp).
    {"radius", "radius", "R or k", "", "R", T::Number, kDefaults.circle.radius, 0, 1e6, 1000, true, "", circle,
     ROPESCOPE_NUMBER(circle.radius)},
    {"text_vector", "text-vector", "Text vector", "Circle-RoPE text axis in (w,h,t) order (default 1,1,1).", "x,y,z", T::Vector, 0, -1e6,
     1e6, 100, false, "", circle, ROPESCOPE_VECTOR(circle.textVector)},
    {"stride", "stride", "Video stride", "Circle-RoPE video: frame t's ring centre moves t*D along (1,1,1) (default 1).", "D", T::Number,
     kDefaults.circle.stride, 0, 1e6, 100, false, "must be from 0 to 1e6", circle, ROPESCOPE_NUMBER(circle.stride)},
    {"temporal", "temporal", "temporal", "Video time index for mrope/compact: qwen2vl (t) or qwen25vl (floor(t*spg*tps)).", "MODE",
     T::Choice, 0, 0, 0, 0, false, "", mropeFamily, ROPESCOPE_CHOICE(temporal.mode, TemporalParams::Mode, kTemporalModes)},
    // Qwen2-VL's time is the frame index: seconds per grid and tokens per second are read only under qwen25vl.
    {"second_per_grid", "second-per-grid", "seconds per grid (spg)", "Qwen2.5-VL seconds per temporal grid (default 1).", "S", T::Number,
     kDefaults.temporal.secondPerGrid, 0, 1e6, 10, false, "must be from 0 to 1e6", mropeFamily, ROPESCOPE_NUMBER(temporal.secondPerGrid),
     nullptr, qwen25Time},
    {"tokens_per_second", "tokens-per-second", "tokens per second (tps)", "Qwen2.5-VL tokens_per_second (default 2).", "N", T::Number,
     kDefaults.temporal.tokensPerSecond, 0, 1e6, 100, false, "must be from 0 to 1e6", mropeFamily,
     ROPESCOPE_NUMBER(temporal.tokensPerSecond), nullptr, qwen25Time},
    // Unset means the scheme's own delta (scheme_registry.cpp): the Number row reads and writes the value in use.
    {"temporal_stride", "temporal-stride", "Frame spacing delta",
     "VideoRoPE(++) / HoPE / OmniRoPE / ILRoPE / spatial-reset / MM-RoPE: frame f sits at s + delta*f on the time axis; "
     "TAD-RoPE: the frame index' weight (default 2 for videorope(++), 1 for the others).",
     "DELTA", T::Number, 1, 0, 1e6, 16, false, "must be from 0 to 1e6", usesTemporalStride,
     [](const SchemeParams& p) { return p.temporalStrideOrDefault(); }, [](SchemeParams& p, double v) { p.temporalStride = v; },
     [](const SchemeParams& a, const SchemeParams& b) { return a.temporalStrideOrDefault() == b.temporalStrideOrDefault(); },
     [](SchemeParams& to, const SchemeParams& from) { to.temporalStride = from.temporalStride; },
     [](const SchemeParams& p) { return p.temporalStride.has_value(); }},
    {"visual_stride", "visual-stride", "V2PE visual stride",
     "V2PE: positions one visual segment spans; each visual token advances by stride/N (default 16).", "S", T::Number,
     kDefaults.visualStride, 0, 1e6, 1024, true, "must be above 0 and at most 1e6", v2pe, ROPESCOPE_NUMBER(visualStride)},
    {"position_scale", "position-scale", "MM-RoPE scale", "MM-RoPE: visual offsets scaled per axis t,h,w (default 4,8,8, Lumos-1's).",
     "t,h,w", T::Vector, 0, 0, 1e6, 64, false, "", mmRope, ROPESCOPE_VECTOR(positionScale)},
    {"ntk_factor", "ntk-factor", "VideoRoPE++ NTK factor",
     "VideoRoPE++ (YaRN-V): context extension factor s of the time axis' NTK-scaled base (default 4).", "S", T::Number, kDefaults.ntkFactor,
     1, 1024, 1024, false, "must be from 1 to 1024", videoRopePlus, ROPESCOPE_NUMBER(ntkFactor)},
    {"ntk_alpha", "ntk-alpha", "XD-RoPE NTK alpha",
     "xd-rope: every pair turns at theta * alpha^(d/(d-2)) (Hunyuan's NTK-alpha; default 1000, 1 = theta).", "A", T::Number,
     kDefaults.ntkAlpha, 1, 1e4, 1e4, false, "must be from 1 to 10000", xdRope, ROPESCOPE_NUMBER(ntkAlpha),
     [](const SchemeParams& p) { return p.kind == SchemeKind::XdRope; }},
    {"newline_column", "newline-column", "XD-RoPE newline column",
     "xd-rope: on (default) adds each image row's newline token and each span's begin and end, H(W+1)+2 tokens per image; off places "
     "only the layout's tokens, as a model runs it.",
     "on|off", T::Flag, 1, 0, 1, 1, false, "", xdRope, ROPESCOPE_FLAG(newlineColumn),
     [](const SchemeParams& p) { return p.kind == SchemeKind::XdRope; }},
};

#undef ROPESCOPE_NUMBER
#undef ROPESCOPE_SAME
#undef ROPESCOPE_CHOICE
#undef ROPESCOPE_FLAG
#undef ROPESCOPE_VECTOR

} // namespace

const std::vector<SchemeParameter>& schemeParameters()
{
    return kParameters;
}

void appendSchemeParameter(const SchemeParameter& row)
{
    kParameters.push_back(row);
}

const SchemeParameter* findSchemeParameter(const std::string& key)
{
    for (const SchemeParameter& row : kParameters)
        if (key == row.key)
            return &row;
    return nullptr;
}

bool reads(const SchemeParameter& row, const SchemeParams& params)
{
    return !params.custom && row.reads(params.kind) && (!row.onlyWhen || row.onlyWhen(params));
}

const char* choiceName(const SchemeParameter& row, const SchemeParams& params)
{
    const auto index = static_cast<int>(row.get(params));
    for (int i = 0; row.choices[i]; ++i)
        if (i == index)
            return row.choices[i];
    return "?";
}

std::optional<double> choiceIndex(const SchemeParameter& row, const std::string& name)
{
    for (int i = 0; row.choices[i]; ++i)
        if (name == row.choices[i])
            return i;
    return std::nullopt;
}

std::string choiceList(const SchemeParameter& row)
{
    std::string out;
    for (int i = 0; row.choices[i]; ++i)
        out += std::string(i == 0 ? "" : row.choices[i + 1] ? ", " : " or ") + row.choices[i];
    return out;
}

std::pair<double, double> sliderSpan(const SchemeParameter& row, double value)
{
    return {row.openMin ? std::min(0.01, value) : std::min(row.min, value), std::max(row.sliderMax, value)};
}

std::string valueText(const SchemeParameter& row, const SchemeParams& params)
{
    switch (row.type) {
    case T::Number: return shortNumber(row.get(params));
    case T::Choice: return choiceName(row, params);
    case T::Flag: return row.get(params) != 0 ? "on" : "off";
    case T::Vector: {
        const std::array<double, 3> v = row.getVector(params);
        return shortNumber(v[0]) + "," + shortNumber(v[1]) + "," + shortNumber(v[2]);
    }
    }
    return {};
}

void validateParameterRanges(const SchemeParams& params)
{
    for (const SchemeParameter& row : kParameters) {
        if (row.type != T::Number || !*row.rangeText)
            continue;
        const double v = row.get(params);
        const bool aboveMin = row.openMin ? v > row.min : v >= row.min;
        if (!(aboveMin && v <= row.max)) // NaN fails both
            throw InvalidInput(row.key, std::string(row.rangeText) + ", got " + shortNumber(v));
    }
}

SchemeParams placementParams(SchemeParams params)
{
    const SchemeParams given = params; // whether a row is read can depend on another row (temporal)
    for (const SchemeParameter& row : kParameters)
        if (!reads(row, given))
            row.copy(params, kDefaults);
    return params;
}

} // namespace ropescope::geometry

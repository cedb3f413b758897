// The scheme parameter table (scheme_parameters.h). A new parameter is one row here and a field in
// SchemeParams; test_scheme_parameters checks each row against the struct (a change of the field is seen by
// operator==, survives the session codec, is reset by placementParams for schemes that do not read it).
#include "core/geometry/scheme_parameters.h"

#include "core/geometry/errors.h"

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
    [](const SchemeParams& p) { return p.field; }, [](SchemeParams& p, double v) { p.field = v; },                                         \
        [](const SchemeParams& a, const SchemeParams& b) { return a.field == b.field; },                                                   \
        [](SchemeParams& to, const SchemeParams& from) { to.field = from.field; }
// An Other row over any member with ==.
#define ROPESCOPE_OTHER(field)                                                                                                             \
    nullptr, nullptr, [](const SchemeParams& a, const SchemeParams& b) { return a.field == b.field; },                                     \
        [](SchemeParams& to, const SchemeParams& from) { to.field = from.field; }

const SchemeParams kDefaults;

std::vector<SchemeParameter> kParameters = {
    {"alpha", "alpha", "alpha", "Circle-RoPE angle mixing: alpha*SA + (1-alpha)*GA, in [0,1] (default 0.5).", "A", T::Number,
     kDefaults.circle.alpha, 0, 1, false, "must be in [0, 1]", circle, ROPESCOPE_NUMBER(circle.alpha)},
    {"radius_mode", "radius", "radius mode", "", "", T::Other, 0, 0, 0, false, "", circle, ROPESCOPE_OTHER(circle.radiusMode)},
    // The message names R or k by the radius mode: validate() checks it (schemes.cpp).
    {"radius", "radius", "R or k", "", "R", T::Other, kDefaults.circle.radius, 0, 1e6, true, "", circle, ROPESCOPE_OTHER(circle.radius)},
    {"text_vector", "text-vector", "Text vector", "", "x,y,z", T::Other, 0, 0, 0, false, "", circle, ROPESCOPE_OTHER(circle.textVector)},
    {"stride", "stride", "Video stride", "Circle-RoPE video: frame t's ring centre moves t*D along (1,1,1) (default 1).", "D", T::Number,
     kDefaults.circle.stride, 0, 1e6, false, "must be from 0 to 1e6", circle, ROPESCOPE_NUMBER(circle.stride)},
    {"temporal", "temporal", "temporal", "", "MODE", T::Other, 0, 0, 0, false, "", mropeFamily, ROPESCOPE_OTHER(temporal.mode)},
    {"second_per_grid", "second-per-grid", "seconds per grid (spg)", "Qwen2.5-VL seconds per temporal grid (default 1).", "S", T::Number,
     kDefaults.temporal.secondPerGrid, 0, 1e6, false, "must be from 0 to 1e6", mropeFamily, ROPESCOPE_NUMBER(temporal.secondPerGrid)},
    {"tokens_per_second", "tokens-per-second", "tokens per second (tps)", "Qwen2.5-VL tokens_per_second (default 2).", "N", T::Number,
     kDefaults.temporal.tokensPerSecond, 0, 1e6, false, "must be from 0 to 1e6", mropeFamily, ROPESCOPE_NUMBER(temporal.tokensPerSecond)},
    // Unset means the scheme's own delta (scheme_registry.cpp): the Number row reads and writes the value in use.
    {"temporal_stride", "temporal-stride", "Frame spacing delta",
     "VideoRoPE(++) / HoPE / OmniRoPE / ILRoPE / spatial-reset / MM-RoPE: frame f sits at s + delta*f on the time axis; "
     "TAD-RoPE: the frame index' weight (default 2 for videorope(++), 1 for the others).",
     "DELTA", T::Number, 1, 0, 1e6, false, "must be from 0 to 1e6", usesTemporalStride,
     [](const SchemeParams& p) { return p.temporalStrideOrDefault(); }, [](SchemeParams& p, double v) { p.temporalStride = v; },
     [](const SchemeParams& a, const SchemeParams& b) { return a.temporalStrideOrDefault() == b.temporalStrideOrDefault(); },
     [](SchemeParams& to, const SchemeParams& from) { to.temporalStride = from.temporalStride; },
     [](const SchemeParams& p) { return p.temporalStride.has_value(); }},
    {"visual_stride", "visual-stride", "V2PE visual stride",
     "V2PE: positions one visual segment spans; each visual token advances by stride/N (default 16).", "S", T::Number,
     kDefaults.visualStride, 0, 1e6, true, "must be above 0 and at most 1e6", v2pe, ROPESCOPE_NUMBER(visualStride)},
    {"position_scale", "position-scale", "MM-RoPE scale", "", "t,h,w", T::Other, 0, 0, 0, false, "", mmRope,
     ROPESCOPE_OTHER(positionScale)},
    {"ntk_factor", "ntk-factor", "VideoRoPE++ NTK factor",
     "VideoRoPE++ (YaRN-V): context extension factor s of the time axis' NTK-scaled base (default 4).", "S", T::Number, kDefaults.ntkFactor,
     1, 1024, false, "must be from 1 to 1024", videoRopePlus, ROPESCOPE_NUMBER(ntkFactor)},
    {"ntk_alpha", "ntk-alpha", "XD-RoPE NTK alpha",
     "xd-rope: every pair turns at theta * alpha^(d/(d-2)) (Hunyuan's NTK-alpha; default 1000, 1 = theta).", "A", T::Number,
     kDefaults.ntkAlpha, 1, 1e4, false, "must be from 1 to 10000", xdRope, ROPESCOPE_NUMBER(ntkAlpha),
     [](const SchemeParams& p) { return p.kind == SchemeKind::XdRope; }},
    {"newline_column", "newline-column", "XD-RoPE newline column", "", "on|off", T::Other, 0, 0, 0, false, "", xdRope,
     ROPESCOPE_OTHER(newlineColumn)},
};

#undef ROPESCOPE_NUMBER
#undef ROPESCOPE_OTHER

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

bool schemeReads(SchemeKind kind, const std::string& key)
{
    const SchemeParameter* row = findSchemeParameter(key);
    return row && row->reads(kind);
}

void validateParameterRanges(const SchemeParams& params)
{
    for (const SchemeParameter& row : kParameters) {
        if (row.type != T::Number)
            continue;
        const double v = row.get(params);
        const bool aboveMin = row.openMin ? v > row.min : v >= row.min;
        if (!(aboveMin && v <= row.max)) // NaN fails both
            throw InvalidInput(row.key, std::string(row.rangeText) + ", got " + shortNumber(v));
    }
}

SchemeParams placementParams(SchemeParams params)
{
    for (const SchemeParameter& row : kParameters)
        if (params.custom || !row.reads(params.kind)) // a scheme file reads none of the built-ins' parameters
            row.copy(params, kDefaults);
    return params;
}

} // namespace ropescope::geometry

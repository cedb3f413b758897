// The built-in schemes, one row each: the only place a scheme's name, component count and one-line summary
// are written. Names, lookups, the CLI's lists and the explorer's tooltips all read this table; adding a
// SchemeKind without a row fails to compile (the static_assert below).
#include "core/geometry/scheme_kind.h"

#include <array>

namespace ropescope::geometry {
namespace {

struct SchemeRow {
    SchemeKind kind;
    const char* name;
    int components;
    const char* summary;
};

constexpr std::array<SchemeRow, 17> kSchemes{{
    {SchemeKind::Hard, "hard", 1, "hard: one index per token, images flattened row-major (LLaVA, plain 1-D RoPE)"},
    {SchemeKind::Unordered, "unordered", 1, "unordered (mPLUG-Owl3, RoPE-Share): every token of an image or frame shares one index"},
    {SchemeKind::Mrope, "mrope", 3, "mrope: Qwen2-VL's (t, h, w) grid; text on the diagonal (n, n, n)"},
    {SchemeKind::Compact, "compact", 3, "compact (RoPE-Compact): as mrope, but after a video each axis continues from its own last value"},
    {SchemeKind::Circle, "circle", 3, "circle: Circle-RoPE, image rings orthogonal to the text axis (alpha, radius, text vector)"},
    {SchemeKind::Vrope, "vrope", 4, "vrope: VRoPE, a symmetric 4-component layout with interleaved frequencies"},
    {SchemeKind::VideoRope, "videorope", 3,
     "videorope: VideoRoPE, frames at s + delta*t, each grid centred on the diagonal; h/w alternate over the high "
     "frequencies, t keeps the lowest"},
    {SchemeKind::Hope, "hope", 3, "hope: HoPE, VideoRoPE's layout with zero frequency on the time channels (t = 0)"},
    {SchemeKind::V2pe, "v2pe", 1, "v2pe: V2PE, one index; visual tokens advance by a fraction (visual stride / tokens)"},
    {SchemeKind::OmniRope, "omnirope", 3,
     "omnirope: OmniRoPE, spatial reset: image rows and columns restart at 0, time at the text index; sectioned frequencies"},
    {SchemeKind::IlRope, "ilrope", 3, "ilrope: ILRoPE, OmniRoPE's positions with Qwen3-VL's interleaved frequencies"},
    {SchemeKind::SpatialReset, "spatial-reset", 3,
     "spatial-reset: MRoPE-I with spatial reset (Revisiting paper): rows and columns restart at 0, time at s + delta*t; "
     "interleaved frequencies"},
    {SchemeKind::MropeI, "mrope-i", 3,
     "mrope-i: Qwen3-VL's MRoPE-I, M-RoPE positions with every video frame its own grid; interleaved frequencies [24,20,20]"},
    {SchemeKind::Mhrope, "mhrope", 3,
     "mhrope: MHRoPE's per-head allocation on MRoPE-I positions (no spatial reset); whole heads per axis (2,3,3 of 8 KV "
     "heads), the rest without rotary. The paper's setting adds spatial reset: spatial-reset with Allocation per-head"},
    {SchemeKind::TadRope, "tad-rope", 1, "tad-rope: TAD-RoPE (TC-LLaVA), one index: token index + delta * frame index"},
    {SchemeKind::VideoRopePlus, "videorope++", 3, "videorope++: VideoRoPE++, VideoRoPE's layout with the time axis on an NTK-scaled base (YaRN-V)"},
    {SchemeKind::MmRope, "mm-rope", 3, "mm-rope: MM-RoPE (Lumos-1), M-RoPE with visual offsets scaled (4,8,8) and every 8 pairs T,T,H,W,H,W,H,W"},
}};

// Row i is SchemeKind i: the enum and the table cannot drift apart.
constexpr bool rowsInEnumOrder()
{
    for (size_t i = 0; i < kSchemes.size(); ++i)
        if (static_cast<size_t>(kSchemes[i].kind) != i)
            return false;
    return true;
}
static_assert(rowsInEnumOrder(), "kSchemes: one row per SchemeKind, in the enum's order");
static_assert(static_cast<size_t>(SchemeKind::MmRope) + 1 == kSchemes.size(), "kSchemes: a SchemeKind without a row");

const SchemeRow& row(SchemeKind kind)
{
    return kSchemes[static_cast<size_t>(kind)];
}

} // namespace

const char* schemeName(SchemeKind kind)
{
    return row(kind).name;
}

const char* schemeSummary(SchemeKind kind)
{
    return row(kind).summary;
}

const std::vector<SchemeKind>& allSchemes()
{
    static const std::vector<SchemeKind> all = [] {
        std::vector<SchemeKind> kinds;
        for (const SchemeRow& r : kSchemes)
            kinds.push_back(r.kind);
        return kinds;
    }();
    return all;
}

std::string schemeNameList()
{
    std::string out;
    for (const SchemeRow& r : kSchemes)
        out += (out.empty() ? "" : ", ") + std::string(r.name);
    return out;
}

std::optional<SchemeKind> schemeFromName(const std::string& name)
{
    for (const SchemeRow& r : kSchemes)
        if (name == r.name)
            return r.kind;
    return std::nullopt;
}

int componentCount(SchemeKind kind)
{
    return row(kind).components;
}

std::vector<std::string> componentNames(SchemeKind kind)
{
    switch (componentCount(kind)) {
    case 1: return {"n"};
    case 4: return {"v1", "v2", "v3", "v4"};
    default: return {"t", "h", "w"};
    }
}

} // namespace ropescope::geometry

// The built-in schemes, one row each: the only place a scheme's name, component count, one-line summary and
// defaults (its own frequency allocation, video form, temporal stride and rotary settings) are written. Names, lookups, the
// CLI's lists, the explorer's tooltips and the defaults SchemeParams falls back on all read this table. Rows
// follow the enum's order and end at its last kind, checked when compiling (below); test_schemes counts the
// kinds and pins every row's defaults, so a kind appended to the enum without a row fails there.
#include "core/geometry/scheme.h"
#include "core/geometry/scheme_kind.h"

#include <iterator>
#include <optional>

namespace ropescope::geometry {
namespace {

using Alloc = FrequencyAllocation::Kind;
constexpr std::nullopt_t kNone = std::nullopt; // no design of its own: sectioned (equal parts for 1-D and 4-D)

struct SchemeRow {
    SchemeKind kind;
    const char* name;
    int components;
    const char* summary;
    std::optional<Alloc> allocation; // the scheme's own frequency allocation (its paper's), or kNone
    VideoForm videoForm;             // how a video is placed unless the user says: one T x H x W grid, or T one-frame grids
    double temporalStride;           // delta between frames for the schemes that read it; 0 where the scheme has none
    // The rotary settings the scheme's model uses, where they are part of its design (GLM-V's half-rotated
    // heads on adjacent pairs); the others take Qwen2-VL's (theta 1e6, every dim, half split).
    double theta = 1e6;
    double partial = 1.0;
    RotaryPairing pairing = RotaryPairing::Half;
};

constexpr SchemeRow kSchemes[] = {
    {SchemeKind::Hard, "hard", 1, "hard: one index per token, images flattened row-major (LLaVA, plain 1-D RoPE)", kNone, VideoForm::Grid,
     0},
    {SchemeKind::Unordered, "unordered", 1, "unordered (mPLUG-Owl3, RoPE-Share): every token of an image or frame shares one index", kNone,
     VideoForm::Grid, 0},
    {SchemeKind::Mrope, "mrope", 3, "mrope: Qwen2-VL's (t, h, w) grid; text on the diagonal (n, n, n)", kNone, VideoForm::Grid, 0},
    {SchemeKind::Compact, "compact", 3, "compact (RoPE-Compact): as mrope, but after a video each axis continues from its own last value",
     kNone, VideoForm::Grid, 0},
    {SchemeKind::Circle, "circle", 3, "circle: Circle-RoPE, image rings orthogonal to the text axis (alpha, radius, text vector)", kNone,
     VideoForm::Grid, 0},
    {SchemeKind::Vrope, "vrope", 4, "vrope: VRoPE, a symmetric 4-component layout with interleaved frequencies", Alloc::Interleaved,
     VideoForm::Grid, 0},
    {SchemeKind::VideoRope, "videorope", 3,
     "videorope: VideoRoPE, frames at s + delta*t, each grid centred on the diagonal; h/w alternate over the high "
     "frequencies, t keeps the lowest",
     Alloc::HwAlternating, VideoForm::Grid, 2},
    {SchemeKind::Hope, "hope", 3, "hope: HoPE, VideoRoPE's layout with zero frequency on the time channels (t = 0)", Alloc::HwAlternating,
     VideoForm::Grid, 1},
    {SchemeKind::V2pe, "v2pe", 1, "v2pe: V2PE, one index; visual tokens advance by a fraction (visual stride / tokens)", kNone,
     VideoForm::Grid, 0},
    {SchemeKind::OmniRope, "omnirope", 3,
     "omnirope: OmniRoPE, spatial reset: image rows and columns restart at 0, time at the text index; sectioned frequencies",
     Alloc::Sectioned, VideoForm::Grid, 1},
    {SchemeKind::IlRope, "ilrope", 3, "ilrope: ILRoPE, OmniRoPE's positions with Qwen3-VL's interleaved frequencies",
     Alloc::InterleavedMrope, VideoForm::Grid, 1},
    {SchemeKind::SpatialReset, "spatial-reset", 3,
     "spatial-reset: MRoPE-I with spatial reset (Revisiting paper): rows and columns restart at 0, time at s + delta*t; "
     "interleaved frequencies",
     Alloc::InterleavedMrope, VideoForm::Grid, 1},
    {SchemeKind::MropeI, "mrope-i", 3,
     "mrope-i: Qwen3-VL's MRoPE-I, M-RoPE positions with every video frame its own grid; interleaved frequencies [24,20,20]",
     Alloc::InterleavedMrope, VideoForm::Split, 0},
    {SchemeKind::Mhrope, "mhrope", 3,
     "mhrope: MHRoPE's per-head allocation on MRoPE-I positions (no spatial reset); whole heads per axis (2,3,3 of 8 KV "
     "heads), the rest without rotary. The paper's setting adds spatial reset: spatial-reset with Allocation per-head",
     Alloc::PerHead, VideoForm::Split, 0},
    {SchemeKind::TadRope, "tad-rope", 1, "tad-rope: TAD-RoPE (TC-LLaVA), one index: token index + delta * frame index", kNone,
     VideoForm::Grid, 1},
    {SchemeKind::VideoRopePlus, "videorope++", 3,
     "videorope++: VideoRoPE++, VideoRoPE's layout with the time axis on an NTK-scaled base (YaRN-V)", Alloc::HwAlternating,
     VideoForm::Grid, 2},
    {SchemeKind::MmRope, "mm-rope", 3,
     "mm-rope: MM-RoPE (Lumos-1), M-RoPE with visual offsets scaled (4,8,8) and every 8 pairs T,T,H,W,H,W,H,W", Alloc::Distributed,
     VideoForm::Grid, 1},
    {SchemeKind::GlmV, "glm-v", 3,
     "glm-v: GLM-4.1V / 4.6V, M-RoPE positions with every video frame its own image span; theta 1e4, half of each head "
     "rotates, on adjacent pairs (2j, 2j+1), sections [8,12,12] (GLM-4.5V's glm4v_moe: the same with --pairing half)",
     kNone, VideoForm::Split, 0, 1e4, 0.5, RotaryPairing::Adjacent},
    {SchemeKind::ErnieVl, "ernie-vl", 3,
     "ernie-vl: ERNIE-4.5-VL, one span per image or video, frame f at t = s + f (one per two video frames), text resuming "
     "at s + max(H, W); h and w alternate over the high frequencies, t takes the 20 lowest of 64; theta 5e5, adjacent pairs",
     Alloc::HwInterleaved, VideoForm::Grid, 0, 5e5, 1.0, RotaryPairing::Adjacent},
    {SchemeKind::XdRope, "xd-rope", 4,
     "xd-rope: HunyuanOCR / HunyuanVL's XD-RoPE, four axes (p, w, h, t): p the plain index, an image's rows and columns "
     "from 0 with a newline column (H(W+1)+2 tokens with begin and end), t the image's number; [16,16,16,16], base "
     "theta * alpha^(d/(d-2)) (NTK-alpha 1000)",
     Alloc::Sectioned, VideoForm::Split, 0, 1e4, 1.0, RotaryPairing::Half},
};

// Row i is SchemeKind i: the enum and the table cannot drift apart.
constexpr bool rowsInEnumOrder()
{
    for (size_t i = 0; i < std::size(kSchemes); ++i)
        if (static_cast<size_t>(kSchemes[i].kind) != i)
            return false;
    return true;
}
static_assert(rowsInEnumOrder(), "kSchemes: one row per SchemeKind, in the enum's order");
// The enum's last kind closes the table: a kind added after it needs its row (and to be named here).
static_assert(static_cast<size_t>(SchemeKind::XdRope) + 1 == std::size(kSchemes), "kSchemes: a SchemeKind without a row");

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

std::optional<FrequencyAllocation::Kind> designAllocation(SchemeKind kind)
{
    return row(kind).allocation;
}

RotaryConfig schemeRotaryDefaults(SchemeKind kind)
{
    RotaryConfig rotary;
    rotary.theta = row(kind).theta;
    rotary.partial = row(kind).partial;
    rotary.pairing = row(kind).pairing;
    return rotary;
}

SchemeParams defaultSchemeParams(SchemeKind kind)
{
    SchemeParams p;
    p.kind = kind;
    p.rotary = schemeRotaryDefaults(kind);
    return p;
}

bool usesTemporalStride(SchemeKind kind)
{
    return row(kind).temporalStride > 0;
}

VideoForm SchemeParams::videoFormOrDefault() const
{
    return videoForm.value_or(row(kind).videoForm);
}

double SchemeParams::temporalStrideOrDefault() const
{
    // A scheme without a temporal stride never reads it; 1 keeps the value meaningful if one asks.
    return temporalStride.value_or(usesTemporalStride(kind) ? row(kind).temporalStride : 1.0);
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
    if (kind == SchemeKind::XdRope) // its code's order: position_ids rows [p, w, h, t]
        return {"p", "w", "h", "t"};
    switch (componentCount(kind)) {
    case 1: return {"n"};
    case 4: return {"v1", "v2", "v3", "v4"};
    default: return {"t", "h", "w"};
    }
}

} // namespace ropescope::geometry

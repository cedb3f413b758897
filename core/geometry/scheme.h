#pragma once
#include "core/geometry/custom_scheme.h"
#include "core/geometry/frequency.h"
#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"
#include "core/geometry/scheme_kind.h"

#include <Eigen/Core>

#include <optional>
#include <string>
#include <vector>

namespace ropescope::geometry {

// Circle-RoPE radius: a fixed R, the paper's auto-k (k * max ||(x,y)||_2 of the centred grid), or the
// official code's auto-k (k * max centred coordinate value).
enum class RadiusMode { Fixed, AutoPaper, AutoCode };

struct CircleParams {
    double alpha = 0.5;
    RadiusMode radiusMode = RadiusMode::Fixed;
    double radius = 10.0; // R for Fixed, k for the auto modes
    // The text axis in (w, h, t) order, as the official code orders its coordinates.
    Eigen::Vector3d textVector{1.0, 1.0, 1.0};
    // Video: frame t's circle is centred at c + t * stride * (1,1,1) (paper sec. 4.3).
    double stride = 1.0;
};

// Video frame index -> temporal position offset tau(t) for the M-RoPE family.
struct TemporalParams {
    enum class Mode { Qwen2VL, Qwen25VL };
    Mode mode = Mode::Qwen2VL;  // tau(t) = t
    double secondPerGrid = 1.0; // Qwen2.5-VL: tau(t) = floor(t * second_per_grid * tokens_per_second)
    double tokensPerSecond = 2.0;

    long long tau(int frame) const;
};

// How a video:TxHxW segment is placed: as one T x H x W grid, or split into T one-frame grids (Qwen3-VL's
// form: its processor separates frames by timestamps, and the reference library splits video_grid_thw this
// way for every scheme).
enum class VideoForm { Grid, Split };
const char* videoFormName(VideoForm form); // "grid", "split"
std::optional<VideoForm> videoFormFromName(const std::string& name);

struct SchemeParams {
    SchemeKind kind = SchemeKind::Mrope;
    CircleParams circle;
    TemporalParams temporal;
    RotaryConfig rotary;
    // Frequency allocation; unset = the scheme's own (sectioned mrope_section for the 3-D schemes,
    // interleaved for VRoPE). Sections unset = [16,24,24] scaled to head_dim (equal split for C != 3).
    std::optional<FrequencyAllocation::Kind> allocationKind;
    std::vector<int> sections;
    // VideoRoPE(++) / HoPE / OmniRoPE / ILRoPE / spatial reset / MM-RoPE: frame f sits at s + delta * f on the
    // temporal axis (TAD-RoPE: the weight of the frame index). Unset: VideoRoPE's 2, the others' 1 (HoPE draws
    // delta from {0.5, 0.75, 1, 1.25, 1.5} while training).
    std::optional<double> temporalStride;
    // V2PE: the positions one visual segment spans (each visual token advances by stride / tokens).
    double visualStride = 16;
    // MM-RoPE: visual offsets scaled per axis (t, h, w); Lumos-1 uses (4, 8, 8).
    Eigen::Vector3d positionScale{4.0, 8.0, 8.0};
    // VideoRoPE++ (YaRN-V): the context extension factor s of the time axis' NTK-scaled base,
    // theta_t = theta * ((L s - 1) / (L - 1))^(d / (d - 2)) with its code's L = 32768.
    double ntkFactor = 4.0;
    // XD-RoPE (HunyuanVL): every pair's base is theta * alpha^(d / (d - 2)) (Hunyuan's dynamic NTK-alpha; d the
    // rotated dims), 1000 in HunyuanOCR's config.
    double ntkAlpha = 1000.0;
    // XD-RoPE: each image row ends with a newline token and each image (or frame) span has a begin and an end
    // token, so an H x W grid takes H(W+1)+2 tokens and the table has more tokens than the layout names. Off:
    // only the layout's own tokens, as a model without those tokens runs the scheme (Vlm::schemeForModel).
    bool newlineColumn = true;
    // A scheme from outside RopeScope's C++ (a Python file, a position table read from a file): when set, it
    // places the tokens and `kind` is unused for placement; the rotary settings and --allocation still apply.
    std::optional<CustomSchemeRef> custom;
    // Unset: the scheme's own form (split for mrope-i and mhrope, Qwen3-VL's schemes; one grid for the others).
    std::optional<VideoForm> videoForm;

    double temporalStrideOrDefault() const;
    VideoForm videoFormOrDefault() const;
    bool isCustom() const { return custom.has_value(); }
};

// Every field equal (what a cache or a "did the scheme change" check needs; no JSON round trip).
bool operator==(const CircleParams& a, const CircleParams& b);
bool operator==(const TemporalParams& a, const TemporalParams& b);
bool operator==(const SchemeParams& a, const SchemeParams& b);
inline bool operator!=(const SchemeParams& a, const SchemeParams& b)
{
    return !(a == b);
}

// The scheme's name as views, tables and messages show it: the built-in's name, or the custom file's name.
std::string schemeLabel(const SchemeParams& params);
// Position components and their names (a custom scheme's own).
int componentCount(const SchemeParams& params);
std::vector<std::string> componentNames(const SchemeParams& params);

// Throws InvalidInput naming the parameter if any value is out of range.
void validate(const SchemeParams& params);

// The allocation a scheme's design fixes (VRoPE interleaved, VideoRoPE / HoPE hw-alternating); none for the
// schemes that take the sectioned default (or a model's own allocation).
std::optional<FrequencyAllocation::Kind> designAllocation(SchemeKind kind);

// The frequency allocation a scheme uses with these parameters.
FrequencyAllocation allocationFor(const SchemeParams& params);

// VideoRoPE++'s NTK scale of the time axis' theta for a context extension factor and head_dim.
double yarnVTimeThetaScale(double ntkFactor, int headDim);
// XD-RoPE's NTK-alpha scale of the base: alpha^(d / (d - 2)) for d rotated dims.
double ntkAlphaThetaScale(double alpha, int rotaryDim);

// The rotary settings a scheme's design fixes (GLM-V: theta 1e4, partial 0.5, adjacent pairs); Qwen2-VL's
// for the others. Head dim and heads stay RotaryConfig's defaults.
RotaryConfig schemeRotaryDefaults(SchemeKind kind);
// A scheme with its own defaults: what choosing it on the command line, in a batch item or a file starts from.
SchemeParams defaultSchemeParams(SchemeKind kind);

// Whether the scheme reads --temporal-stride (the GUI enables its box, tables record it).
bool usesTemporalStride(SchemeKind kind);

// Positions of every token of the layout under the scheme (docs/DESIGN.md sec. 2).
PositionTable buildPositionTable(const Layout& layout, const SchemeParams& params);

} // namespace ropescope::geometry

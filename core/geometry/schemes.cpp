#include "core/geometry/circle_projection.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"
#include "core/geometry/scheme_parameters.h"
#include "core/geometry/xd_rope.h"

#include <algorithm>
#include <cmath>

namespace ropescope::geometry {
namespace {

// Each rule walks the layout once, writing positions; `next` is where the following text token goes.

// A run of text tokens at next, next+1, ... on every component; advances token and next.
void placeText(PositionTable& t, int& token, double& next, int length)
{
    for (int i = 0; i < length; ++i)
        t.positions.row(token++).setConstant(next++);
}

// Walks the layout for the schemes whose text sits on the diagonal: text runs go to next, next+1, ...;
// each visual segment is placed by visual(segment, token, next), which advances token and returns
// where the following text resumes.
template <class Visual> void walk(PositionTable& t, Visual visual)
{
    double next = 0;
    int token = 0;
    for (const Segment& seg : t.layout.segments) {
        if (seg.isVisual())
            next = visual(seg, token, next);
        else
            placeText(t, token, next, seg.length);
    }
}

void placeHard(PositionTable& t)
{
    for (int i = 0; i < t.size(); ++i)
        t.positions(i, 0) = i;
}

void placeUnordered(PositionTable& t)
{
    walk(t, [&t](const Segment& seg, int& token, double next) {
        for (int f = 0; f < seg.frames; ++f)
            for (int k = 0; k < seg.rows * seg.cols; ++k)
                t.positions(token++, 0) = next + f;
        return next + seg.frames;
    });
}

// M-RoPE (Qwen2-VL get_rope_index) and RoPE-Compact share the visual rule and differ in how text resumes:
// M-RoPE at max over all components + 1, Compact per axis at that axis' own last value + 1.
void placeMropeFamily(PositionTable& t, const TemporalParams& temporal, bool compact)
{
    Eigen::Vector3d next(0, 0, 0); // (t, h, w)
    int token = 0;
    for (const Segment& seg : t.layout.segments) {
        if (!seg.isVisual()) {
            for (int i = 0; i < seg.length; ++i, ++token)
                t.positions.row(token) = (next.array() + i).transpose();
            next.array() += seg.length;
            continue;
        }
        const double start = next.maxCoeff(); // all axes agree unless Compact followed a visual segment
        const Eigen::Vector3d s = compact ? next : Eigen::Vector3d::Constant(start);
        long long lastTau = 0;
        for (int f = 0; f < seg.frames; ++f) {
            lastTau = temporal.tau(f);
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    t.positions(token, 0) = s[0] + static_cast<double>(lastTau);
                    t.positions(token, 1) = s[1] + r;
                    t.positions(token, 2) = s[2] + c;
                }
        }
        const Eigen::Vector3d last(s[0] + static_cast<double>(lastTau), s[1] + seg.rows - 1, s[2] + seg.cols - 1);
        next = compact ? Eigen::Vector3d(last.array() + 1) : Eigen::Vector3d::Constant(last.maxCoeff() + 1);
    }
}

void placeCircle(PositionTable& t, const CircleParams& circle)
{
    walk(t, [&t, &circle](const Segment& seg, int& token, double next) {
        // c is the index the first visual token would get under M-RoPE; every frame shares the ring shape.
        const Eigen::MatrixX3d ring = circleOffsets(seg.rows, seg.cols, circle);
        const PlaneBasis basis = planeBasis(circle.textVector);
        const double c = next;
        const int perFrame = seg.rows * seg.cols;
        double segmentMax = -INFINITY;
        for (int f = 0; f < seg.frames; ++f) {
            const double centre = c + f * circle.stride;
            auto block = t.positions.middleRows(token, perFrame);
            block = ring.array() + centre;
            segmentMax = std::max(segmentMax, block.maxCoeff());
            t.rings.push_back({static_cast<int>(t.rings.size()), Eigen::Vector3d::Constant(centre), reverseAxes(basis.u),
                               reverseAxes(basis.v), circleRadius(circle, seg.rows, seg.cols)});
            token += perFrame;
        }
        return segmentMax + 1;
    });
}

// VRoPE: four symmetric directions from the frame's corners, frames stacked along the text axis.
void placeVrope(PositionTable& t)
{
    walk(t, [&t](const Segment& seg, int& token, double next) {
        const int H = seg.rows, W = seg.cols;
        for (int f = 0; f < seg.frames; ++f) {
            const double base = next + static_cast<double>(f) * (H + W - 1);
            for (int h = 0; h < H; ++h)
                for (int w = 0; w < W; ++w, ++token) {
                    t.positions(token, 0) = base + h + w;
                    t.positions(token, 1) = base + h + (W - 1 - w);
                    t.positions(token, 2) = base + (H - 1 - h) + w;
                    t.positions(token, 3) = base + (H - 1 - h) + (W - 1 - w);
                }
        }
        return next + static_cast<double>(seg.frames) * (H + W - 1);
    });
}

constexpr double kMaxScale = 1e6;

// VideoRoPE (its reference get_videorope_index): frame f at t = s + delta * f, and each frame's grid on the
// diagonal through t, centred: h = t + r - floor((H-1)/2), w = t + c - floor((W-1)/2). The next token goes
// to the largest t + 1, so text after an image continues at s + 1 (its h, w overlap the image's).
// HoPE: the same layout with the temporal channels at zero frequency, which its reference code does by
// setting every t position to 0 before the rotary: the table holds t = 0, what the rotary sees.
void placeVideoRope(PositionTable& t, double delta, bool hope)
{
    walk(t, [&t, delta](const Segment& seg, int& token, double next) {
        // (H-1)/2 rounds down as Python's // does: H >= 1.
        const int hc = (seg.rows - 1) / 2, wc = (seg.cols - 1) / 2;
        for (int f = 0; f < seg.frames; ++f) {
            const double tf = next + delta * f;
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    t.positions(token, 0) = tf;
                    t.positions(token, 1) = tf + r - hc;
                    t.positions(token, 2) = tf + c - wc;
                }
        }
        return next + delta * (seg.frames - 1) + 1;
    });
    if (hope)
        t.positions.col(0).setZero();
}

// V2PE (its reference get_v2pe_index): one index; text advances by 1, a visual segment of N tokens by
// stride / N per token (token k at last + stride * (k + 1) / N), and the text after it resumes at
// ceil(last visual) + 1.
void placeV2pe(PositionTable& t, double stride)
{
    double last = -1;
    int token = 0;
    for (const Segment& seg : t.layout.segments) {
        if (!seg.isVisual()) {
            for (int i = 0; i < seg.length; ++i)
                t.positions(token++, 0) = ++last;
            continue;
        }
        const long long n = static_cast<long long>(seg.frames) * seg.rows * seg.cols;
        for (long long k = 0; k < n; ++k)
            t.positions(token++, 0) = last + stride * static_cast<double>(k + 1) / static_cast<double>(n);
        last = std::ceil(t.positions(token - 1, 0));
    }
}

// Spatial reset: a visual segment's frame f, row r, col c at (next + delta * f, r, c), the spatial axes
// restarting at 0 for every image.
void placeResetSegment(PositionTable& t, const Segment& seg, int& token, double next, double delta)
{
    for (int f = 0; f < seg.frames; ++f)
        for (int r = 0; r < seg.rows; ++r)
            for (int c = 0; c < seg.cols; ++c, ++token) {
                t.positions(token, 0) = next + delta * f;
                t.positions(token, 1) = r;
                t.positions(token, 2) = c;
            }
}

// OmniRoPE / ILRoPE (their reference get_omnirope_index): text at (p, p, p), visual segments with spatial
// reset; the shift then grows by max(T, H, W) (the code's rule, not (T - 1) * delta + 1), and text
// continues from it.
void placeOmniRope(PositionTable& t, double delta)
{
    walk(t, [&t, delta](const Segment& seg, int& token, double next) {
        placeResetSegment(t, seg, token, next, delta);
        // The reference (get_omnirope_index, Multimodal-RoPEs cd413b9): the segment's temporal extent is
        // (T - 1) * delta + 1, so text after a video with delta != 1 resumes after its last frame.
        return next + std::max({delta * (seg.frames - 1) + 1, double(seg.rows), double(seg.cols)});
    });
}

// MRoPE-I with spatial reset ("Revisiting Multimodal Positional Encoding"; the reference library's
// get_mrope_interleave_index with spatial_reset): segments as above, and the token after the segment
// (the <|vision_end|> its code places) at s + max((T - 1) * delta, H - 1, W - 1) + 1.
// When a visual segment follows another directly (split video frames, images back to back), the first one's
// <|vision_end|> slot stays reserved: the reference always has that token, so the next block starts after it.
void placeMropeReset(PositionTable& t, double delta)
{
    double next = 0;
    int token = 0;
    bool endSlotUnused = false;
    for (const Segment& seg : t.layout.segments) {
        if (!seg.isVisual()) {
            placeText(t, token, next, seg.length);
            endSlotUnused = false;
            continue;
        }
        if (endSlotUnused)
            next += 1;
        placeResetSegment(t, seg, token, next, delta);
        next += std::max({delta * (seg.frames - 1), double(seg.rows - 1), double(seg.cols - 1)}) + 1;
        endSlotUnused = true;
    }
}

// MRoPE-I (Qwen3-VL; the reference library's get_mrope_interleave_index): M-RoPE's placement with every
// video frame its own one-frame grid (Qwen3-VL separates frames by timestamps): frame f at (s_f, s_f + r,
// s_f + c), the next frame (and the text after the last) at s_f + max(H, W). MHRoPE uses the same positions.
void placeMropeI(PositionTable& t)
{
    walk(t, [&t](const Segment& seg, int& token, double next) {
        for (int f = 0; f < seg.frames; ++f) {
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    t.positions(token, 0) = next;
                    t.positions(token, 1) = next + r;
                    t.positions(token, 2) = next + c;
                }
            next += std::max(seg.rows, seg.cols);
        }
        return next;
    });
}

// ERNIE-4.5-VL (transformers' Ernie4_5_VLMoeModel.get_rope_index with the fixed get_vision_position_ids of
// huggingface/transformers#45400): a visual segment is one span starting at s, frame (temporal patch) f at
// (s + f, s + r, s + c); the text after it resumes at s + max(H, W), whatever T is, so a long video's later
// frames share t values with that text.
void placeErnieVl(PositionTable& t)
{
    walk(t, [&t](const Segment& seg, int& token, double next) {
        for (int f = 0; f < seg.frames; ++f)
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    t.positions(token, 0) = next + f;
                    t.positions(token, 1) = next + r;
                    t.positions(token, 2) = next + c;
                }
        return next + std::max(seg.rows, seg.cols);
    });
}

// TAD-RoPE (TC-LLaVA's temporal-aware dual RoPE): the 1-D index plus gamma x the time index, where the
// time index counts frames through the sequence (frame f of a video at its start + f; text and images
// keep the index reached so far), so the two rotations compose to one at i + gamma * tau.
void placeTadRope(PositionTable& t, double gamma)
{
    double tau = 0;
    int token = 0;
    for (const Segment& seg : t.layout.segments) {
        if (!seg.isVisual()) {
            for (int i = 0; i < seg.length; ++i, ++token)
                t.positions(token, 0) = token + gamma * tau;
            continue;
        }
        for (int f = 0; f < seg.frames; ++f)
            for (int k = 0; k < seg.rows * seg.cols; ++k, ++token)
                t.positions(token, 0) = token + gamma * (tau + f);
        tau += seg.frames - 1;
    }
}

// MM-RoPE (Lumos-1; the reference library's get_mmrope_index): M-RoPE's placement with the visual offsets
// scaled per axis: (s + st * delta * f, s + sh * r, s + sw * c); text resumes at the segment's max + 1.
void placeMmRope(PositionTable& t, const Eigen::Vector3d& scale, double delta)
{
    walk(t, [&t, &scale, delta](const Segment& seg, int& token, double next) {
        for (int f = 0; f < seg.frames; ++f)
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    t.positions(token, 0) = next + scale[0] * delta * f;
                    t.positions(token, 1) = next + scale[1] * r;
                    t.positions(token, 2) = next + scale[2] * c;
                }
        return next + std::max({scale[0] * delta * (seg.frames - 1), scale[1] * (seg.rows - 1), scale[2] * (seg.cols - 1)}) + 1;
    });
}

// A custom scheme's positions, checked whatever the scheme checked itself: one row per token, its own
// component count, finite numbers.
void placeCustom(PositionTable& t, const CustomSchemeRef& ref)
{
    const CustomScheme& scheme = *ref.scheme;
    Eigen::MatrixXd p = scheme.positions(t.layout, ref.resolvedValues());
    const std::string label = scheme.label();
    if (p.rows() != t.size())
        throw InvalidInput("scheme",
                           label + " gave positions for " + std::to_string(p.rows()) + " tokens; the layout " + t.layout.toString() +
                               " has " + std::to_string(t.size()));
    if (p.cols() != scheme.components())
        throw InvalidInput(
            "scheme", label + " gave " + std::to_string(p.cols()) + " position components; it has " + std::to_string(scheme.components()));
    for (Eigen::Index c = 0; c < p.cols(); ++c)
        for (Eigen::Index i = 0; i < p.rows(); ++i)
            if (!std::isfinite(p(i, c)) || std::abs(p(i, c)) > 1e15)
                throw InvalidInput("scheme",
                                   label + " gave " +
                                       (std::isfinite(p(i, c)) ? "a position beyond 1e15 (" + shortNumber(p(i, c)) + ")"
                                                               : std::string("a non-finite position")) +
                                       " for token " + std::to_string(i) + ", component " + std::to_string(c));
    t.positions = std::move(p);
    t.customScheme = label;
    t.customComponents = scheme.componentNames();
}

bool finite3(const Eigen::Vector3d& v)
{
    return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z());
}

} // namespace

std::string schemeLabel(const SchemeParams& params)
{
    return params.custom ? customLabel(*params.custom) : std::string(schemeName(params.kind));
}

int componentCount(const SchemeParams& params)
{
    if (params.custom && params.custom->scheme)
        return params.custom->scheme->components();
    return componentCount(params.kind);
}

std::vector<std::string> componentNames(const SchemeParams& params)
{
    if (params.custom && params.custom->scheme)
        return params.custom->scheme->componentNames();
    return componentNames(params.kind);
}

const char* videoFormName(VideoForm form)
{
    return form == VideoForm::Split ? "split" : "grid";
}

std::optional<VideoForm> videoFormFromName(const std::string& name)
{
    if (name == "grid")
        return VideoForm::Grid;
    if (name == "split")
        return VideoForm::Split;
    return std::nullopt;
}

double yarnVTimeThetaScale(double ntkFactor, int headDim)
{
    constexpr double kOriginalContext = 32768; // VideoRoPE++'s code fixes max_position_embeddings to this
    return std::pow((kOriginalContext * ntkFactor - 1) / (kOriginalContext - 1), double(headDim) / (headDim - 2));
}

double ntkAlphaThetaScale(double alpha, int rotaryDim)
{
    return std::pow(alpha, double(rotaryDim) / (rotaryDim - 2));
}

long long TemporalParams::tau(int frame) const
{
    if (mode == Mode::Qwen2VL)
        return frame;
    return static_cast<long long>(std::floor(frame * secondPerGrid * tokensPerSecond));
}

bool operator==(const CircleParams& a, const CircleParams& b)
{
    return a.alpha == b.alpha && a.radiusMode == b.radiusMode && a.radius == b.radius && a.textVector == b.textVector &&
        a.stride == b.stride;
}

bool operator==(const TemporalParams& a, const TemporalParams& b)
{
    return a.mode == b.mode && a.secondPerGrid == b.secondPerGrid && a.tokensPerSecond == b.tokensPerSecond;
}

bool operator==(const SchemeParams& a, const SchemeParams& b)
{
    // The scheme parameters are compared row by row (their table); then what is not a row: the rotary box,
    // the allocation, the scheme file, the video form. A frame spacing left unset is not one set to the
    // scheme's own value (the row compares values in use), so the optional itself is compared too.
    const std::vector<SchemeParameter>& rows = schemeParameters();
    return a.kind == b.kind && std::all_of(rows.begin(), rows.end(), [&](const SchemeParameter& row) { return row.equal(a, b); }) &&
        a.temporalStride == b.temporalStride && a.rotary.theta == b.rotary.theta && a.rotary.headDim == b.rotary.headDim &&
        a.rotary.partial == b.rotary.partial && a.rotary.pairing == b.rotary.pairing && a.rotary.heads == b.rotary.heads &&
        a.rotary.proportional == b.rotary.proportional && a.rotary.linearFactor == b.rotary.linearFactor &&
        a.allocationKind == b.allocationKind && a.sections == b.sections && a.custom == b.custom &&
        a.videoFormOrDefault() == b.videoFormOrDefault();
}

namespace {

// A custom scheme must be loaded (the application loads, and trusts, the file), and its values must be
// parameters it declares, inside their ranges.
void validateCustom(const CustomSchemeRef& ref)
{
    const std::string label = customLabel(ref);
    if (!ref.scheme)
        throw InvalidInput("scheme", label + " is not loaded");
    const std::vector<CustomParameter> declared = ref.scheme->parameters();
    for (const auto& [name, value] : ref.values) {
        const CustomParameter* found = nullptr;
        for (const CustomParameter& p : declared)
            if (p.name == name)
                found = &p;
        if (!found) {
            std::string names;
            for (const CustomParameter& p : declared)
                names += (names.empty() ? "" : ", ") + p.name;
            throw InvalidInput("param",
                               label + " has no parameter '" + name + "'" +
                                   (names.empty() ? std::string(" (it declares none)") : " (it declares " + names + ")"));
        }
        if (!(value >= found->min && value <= found->max))
            throw InvalidInput("param",
                               name + " must be from " + shortNumber(found->min) + " to " + shortNumber(found->max) + " (" + label +
                                   "'s PARAMETERS), got " + shortNumber(value));
    }
}

} // namespace

void validate(const SchemeParams& p)
{
    if (p.custom)
        validateCustom(*p.custom);
    // The Number rows of the parameter table (alpha, stride, the temporal and stride parameters, the NTK ones).
    validateParameterRanges(p);
    const CircleParams& c = p.circle;
    // Upper bounds keep every position, distance and PTD finite in double precision (and the Qwen2.5-VL
    // time index inside int64) for the largest layouts.
    if (!(c.radius > 0.0 && c.radius <= kMaxScale))
        throw InvalidInput("radius",
                           std::string() + (c.radiusMode == RadiusMode::Fixed ? "R" : "k") + " must be above 0 and at most 1e6, got " +
                               shortNumber(c.radius));
    if (!finite3(c.textVector) || c.textVector.cwiseAbs().maxCoeff() < 1e-6)
        throw InvalidInput("text_vector", "must be a finite non-zero vector");
    for (int a = 0; a < 3; ++a)
        if (!(p.positionScale[a] >= 0.0 && p.positionScale[a] <= kMaxScale))
            throw InvalidInput("position_scale", "each scale must be from 0 to 1e6, got " + shortNumber(p.positionScale[a]));
    if (p.kind == SchemeKind::XdRope && p.rotary.rotaryDim() < 4)
        throw InvalidInput("head_dim",
                           "xd-rope's NTK-alpha base needs at least 4 rotated dims, got " + std::to_string(p.rotary.rotaryDim()));
    if (p.kind == SchemeKind::VideoRopePlus && p.rotary.headDim < 4)
        throw InvalidInput("head_dim", "videorope++'s NTK time base needs head_dim of at least 4, got " + std::to_string(p.rotary.headDim));
    validateAllocation(allocationFor(p), p.rotary);
}

namespace {

// A custom scheme's per-pair table as the named allocation it equals, where one does (so tables, charts and
// model outputs call it what it is); otherwise per-pair.
FrequencyAllocation namedAllocation(const std::vector<int>& table, int components)
{
    const int half = static_cast<int>(table.size());
    std::vector<int> counts(static_cast<size_t>(components), 0);
    for (int c : table)
        if (c >= 0 && c < components)
            ++counts[static_cast<size_t>(c)];
    std::vector<FrequencyAllocation> candidates{FrequencyAllocation::sectioned(counts), FrequencyAllocation::interleaved(components)};
    if (components == 3)
        for (FrequencyAllocation a : {FrequencyAllocation::interleavedMrope(counts), FrequencyAllocation::hwAlternating(counts),
                                      FrequencyAllocation::distributed()})
            candidates.push_back(a);
    for (const FrequencyAllocation& a : candidates)
        if (a.components == components && a.componentTable(half) == table)
            return a;
    return FrequencyAllocation::perPair(table, components);
}

FrequencyAllocation allocationKindFor(const SchemeParams& p)
{
    const int components = componentCount(p);
    const int half = p.rotary.halfDim();
    if (p.custom && !p.allocationKind)
        if (auto own = p.custom->scheme->allocation(p.rotary.headDim, half))
            return namedAllocation(*own, components);
    if (components == 1) {
        // One axis drives every pair; an allocation that spreads pairs over axes would be silently ignored.
        if (p.allocationKind && *p.allocationKind != FrequencyAllocation::Kind::Sectioned &&
            *p.allocationKind != FrequencyAllocation::Kind::Interleaved)
            throw InvalidInput("allocation",
                               std::string() + allocationKindName(*p.allocationKind) + " spreads pairs over the axes t, h, w; " +
                                   schemeLabel(p) + " has one position axis, which drives every pair");
        return FrequencyAllocation::sectioned({half});
    }
    const auto kind = p.allocationKind.value_or(designAllocation(p.kind).value_or(FrequencyAllocation::Kind::Sectioned));
    if (kind == FrequencyAllocation::Kind::Interleaved)
        return FrequencyAllocation::interleaved(components);
    if (kind != FrequencyAllocation::Kind::Sectioned && components != 3)
        throw InvalidInput("allocation",
                           std::string() + allocationKindName(kind) + " is for the three-axis schemes (t, h, w), not " + schemeLabel(p));
    if (kind == FrequencyAllocation::Kind::InterleavedMrope)
        return FrequencyAllocation::interleavedMrope(p.sections.empty() ? defaultInterleavedMropeSection(p.rotary.rotaryDim())
                                                                        : p.sections);
    if (kind == FrequencyAllocation::Kind::HwAlternating)
        return FrequencyAllocation::hwAlternating(p.sections.empty() ? defaultMropeSection(p.rotary.rotaryDim()) : p.sections);
    if (kind == FrequencyAllocation::Kind::Distributed)
        return FrequencyAllocation::distributed();
    if (kind == FrequencyAllocation::Kind::HwInterleaved)
        return FrequencyAllocation::hwInterleaved(p.sections.empty() ? defaultHwInterleavedSection(p.rotary.rotaryDim()) : p.sections);
    if (kind == FrequencyAllocation::Kind::PerHead)
        return FrequencyAllocation::perHeadAxes(p.sections.empty() ? defaultHeadSections(p.rotary.heads) : p.sections);
    if (!p.sections.empty())
        return FrequencyAllocation::sectioned(p.sections);
    if (components == 3)
        return FrequencyAllocation::sectioned(defaultMropeSection(p.rotary.rotaryDim()));
    std::vector<int> equal(static_cast<size_t>(components), half / components);
    equal.back() += half % components;
    return FrequencyAllocation::sectioned(equal);
}

} // namespace

FrequencyAllocation allocationFor(const SchemeParams& p)
{
    FrequencyAllocation a = allocationKindFor(p);
    if (p.kind == SchemeKind::VideoRopePlus && p.rotary.rotaryDim() >= 4)
        a.temporalThetaScale = yarnVTimeThetaScale(p.ntkFactor, p.rotary.rotaryDim());
    if (p.kind == SchemeKind::XdRope && p.rotary.rotaryDim() >= 4)
        a.thetaScale = ntkAlphaThetaScale(p.ntkAlpha, p.rotary.rotaryDim());
    return a;
}

namespace {

bool splitsVideos(const Layout& layout)
{
    for (const Segment& seg : layout.segments)
        if (seg.kind == SegmentKind::Video && seg.frames > 1)
            return true;
    return false;
}

// Every video:TxHxW as T video:1xHxW segments in a row.
Layout splitVideos(const Layout& layout)
{
    Layout out;
    for (const Segment& seg : layout.segments) {
        if (seg.kind != SegmentKind::Video || seg.frames <= 1) {
            out.segments.push_back(seg);
            continue;
        }
        for (int f = 0; f < seg.frames; ++f) {
            Segment frame = seg;
            frame.frames = 1;
            out.segments.push_back(frame);
        }
    }
    return out;
}

} // namespace

PositionTable buildPositionTable(const Layout& layout, const SchemeParams& params)
{
    validate(params);
    const bool split = params.videoFormOrDefault() == VideoForm::Split;
    // XD-RoPE builds its own token table (the newline column adds tokens); the others place the layout's.
    const bool xdRope = params.kind == SchemeKind::XdRope && !params.custom;
    PositionTable table = xdRope ? xdRopeTable(layout, params.newlineColumn, split) : tokenMetadata(layout);
    table.scheme = params.kind;
    table.rotary = params.rotary;
    table.allocation = allocationFor(params);
    if (xdRope)
        return table;
    if (params.custom) { // it places videos itself (the video form is a built-in's setting)
        placeCustom(table, *params.custom);
        return table;
    }
    table.positions.resize(table.size(), componentCount(params.kind));
    if (split && splitsVideos(layout)) {
        // Placed on the split layout (T one-frame videos in a row), kept under the user's layout: the
        // tokens and their frames are the same, only where the scheme puts them changes.
        PositionTable placed = buildPositionTable(splitVideos(layout), params);
        table.positions = std::move(placed.positions);
        return table;
    }

    switch (params.kind) {
    case SchemeKind::Hard: placeHard(table); break;
    case SchemeKind::Unordered: placeUnordered(table); break;
    case SchemeKind::Mrope: placeMropeFamily(table, params.temporal, false); break;
    case SchemeKind::Compact: placeMropeFamily(table, params.temporal, true); break;
    case SchemeKind::Circle: placeCircle(table, params.circle); break;
    case SchemeKind::Vrope: placeVrope(table); break;
    case SchemeKind::VideoRope: placeVideoRope(table, params.temporalStrideOrDefault(), false); break;
    case SchemeKind::Hope: placeVideoRope(table, params.temporalStrideOrDefault(), true); break;
    case SchemeKind::V2pe: placeV2pe(table, params.visualStride); break;
    case SchemeKind::OmniRope:
    case SchemeKind::IlRope: placeOmniRope(table, params.temporalStrideOrDefault()); break;
    case SchemeKind::SpatialReset: placeMropeReset(table, params.temporalStrideOrDefault()); break;
    case SchemeKind::MropeI:
    case SchemeKind::Mhrope:
    case SchemeKind::GlmV:
        // Split (their default): every frame its own grid. As one grid, M-RoPE's placement of a T x H x W block.
        split ? placeMropeI(table) : placeMropeFamily(table, params.temporal, false);
        break;
    case SchemeKind::TadRope: placeTadRope(table, params.temporalStrideOrDefault()); break;
    case SchemeKind::VideoRopePlus: placeVideoRope(table, params.temporalStrideOrDefault(), false); break;
    case SchemeKind::MmRope: placeMmRope(table, params.positionScale, params.temporalStrideOrDefault()); break;
    case SchemeKind::ErnieVl: placeErnieVl(table); break;
    case SchemeKind::XdRope: break; // placed by xdRopeTable above
    }
    return table;
}

} // namespace ropescope::geometry

#include "core/user_schemes/scheme_export.h"

#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"
#include "core/io/position_table_io.h"
#include "scheme_template_source.h" // generated from scheme_template.py (CMakeLists.txt)

#include <QRegularExpression>
#include <QStringList>

#include <algorithm>

namespace ropescope::user_schemes {
namespace {

using namespace geometry;

QByteArray number(double v)
{
    const QByteArray text = io::formatNumber(v);
    // A Python float literal, so a parameter stays a float ("2" would pass an int to the rules).
    return text.contains('.') || text.contains('e') || text.contains("inf") || text.contains("nan") ? text : text + ".0";
}

QByteArray quoted(const std::string& s)
{
    return "\"" + QByteArray::fromStdString(s) + "\"";
}

// PARAMETERS entries: the value exported as the default, inside the span a slider offers for its row
// (core/geometry/scheme_parameters.cpp). Which parameters each scheme's rule takes is the rule's signature
// (scheme_template.py); MM-RoPE's scale vector is three of them.
struct Parameter {
    std::string name;
    double value, min, max;
};

Parameter parameter(const char* key, double value, const std::string& name = {})
{
    const auto [min, max] = sliderSpan(*findSchemeParameter(key), value);
    return {name.empty() ? key : name, value, min, max};
}

std::vector<Parameter> parametersOf(const SchemeParams& p)
{
    const double delta = p.temporalStrideOrDefault();
    switch (p.kind) {
    case SchemeKind::Mrope:
    case SchemeKind::Compact:
        return {parameter("second_per_grid", p.temporal.secondPerGrid), parameter("tokens_per_second", p.temporal.tokensPerSecond)};
    case SchemeKind::Circle:
        return {parameter("alpha", p.circle.alpha), parameter("radius", p.circle.radius), parameter("stride", p.circle.stride)};
    case SchemeKind::VideoRope:
    case SchemeKind::Hope:
    case SchemeKind::VideoRopePlus:
    case SchemeKind::OmniRope:
    case SchemeKind::IlRope:
    case SchemeKind::SpatialReset:
    case SchemeKind::TadRope: return {parameter("temporal_stride", delta)};
    case SchemeKind::V2pe: return {parameter("visual_stride", p.visualStride)};
    case SchemeKind::MmRope:
        return {parameter("temporal_stride", delta), parameter("position_scale", p.positionScale[0], "scale_t"),
                parameter("position_scale", p.positionScale[1], "scale_h"), parameter("position_scale", p.positionScale[2], "scale_w")};
    default: return {};
    }
}

QByteArray constantsOf(const SchemeParams& p)
{
    QByteArray out;
    auto line = [&out](const QByteArray& text) { out += text + "\n"; };
    switch (p.kind) {
    case SchemeKind::Mrope:
    case SchemeKind::Compact:
        line("COMPACT = " + QByteArray(p.kind == SchemeKind::Compact ? "True" : "False") +
             "  # each axis resumes after its own last value");
        line("TEMPORAL = " + quoted(choiceName(*findSchemeParameter("temporal"), p)) +
             "  # video time index: qwen2vl (frame) or qwen25vl (floor(frame * second_per_grid * tokens_per_second))");
        break;
    case SchemeKind::Circle:
        line("RADIUS_MODE = " + quoted(choiceName(*findSchemeParameter("radius_mode"), p)) +
             "  # fixed: radius is R; auto / code-auto: radius is k");
        line("TEXT_VECTOR = (" + number(p.circle.textVector.x()) + ", " + number(p.circle.textVector.y()) + ", " +
             number(p.circle.textVector.z()) + ")  # the text axis in (w, h, t) order");
        break;
    case SchemeKind::VideoRope:
    case SchemeKind::Hope:
    case SchemeKind::VideoRopePlus:
        line("HOPE = " + QByteArray(p.kind == SchemeKind::Hope ? "True" : "False") + "  # t positions at 0");
        break;
    case SchemeKind::OmniRope:
    case SchemeKind::IlRope:
    case SchemeKind::SpatialReset:
        line("RESET_RULE = " + quoted(p.kind == SchemeKind::SpatialReset ? "mrope-i" : "omnirope") +
             "  # how text resumes after a visual segment");
        break;
    default: line("# (none)");
    }
    return out;
}

QByteArray sectionsLiteral(const std::vector<int>& sections)
{
    if (sections.empty())
        return "None";
    QByteArray out = "[";
    for (size_t i = 0; i < sections.size(); ++i)
        out += (i ? ", " : "") + QByteArray::number(sections[i]);
    return out + "]";
}

// allocation(head_dim) when the scheme's design (or the user) fixes one; none when a model's own allocation
// (or the sectioned default) should apply, as it does for the built-in.
QByteArray allocationOf(const SchemeParams& p, QByteArray* note)
{
    const int components = componentCount(p.kind);
    const auto kind = p.allocationKind ? p.allocationKind : designAllocation(p.kind);
    if (components == 1 || (!kind && p.sections.empty()))
        return "# No allocation(): a model run uses the model's own (its mrope_section), a layout the sectioned default.\n";
    if (kind == FrequencyAllocation::Kind::PerHead) {
        *note += "MHRoPE turns each head by one axis (a per-head split), which a per-pair allocation() cannot say:\n"
                 "in RopeScope, run this file with --allocation per-head for MHRoPE's rotary.\n";
        return "# No allocation(): MHRoPE's split is per head (RopeScope: --allocation per-head).\n";
    }
    const char* name = allocationKindName(kind.value_or(FrequencyAllocation::Kind::Sectioned));
    return "ALLOCATION = " + quoted(name) + "\nSECTIONS = " + sectionsLiteral(p.sections) + R"PY(  # None: the default for the rotated dims


def allocation(head_dim):
    """The component (0..C-1) driving each rotated pair; head_dim is the number of dims that rotate."""
    half = head_dim // 2
    c = len(COMPONENTS)
    if ALLOCATION == "interleaved":
        return [j % c for j in range(half)]
    if ALLOCATION == "distributed":  # MM-RoPE: T,T,H,W,H,W,H,W in every 8 pairs
        return [(0, 0, 1, 2, 1, 2, 1, 2)[j % 8] for j in range(half)]
    if ALLOCATION == "hw-interleaved":  # ERNIE-4.5-VL: h on even, w on odd pairs above the t lowest
        t = SECTIONS[0] if SECTIONS else half * 20 // 64
        return [0 if j >= half - t else 1 if j % 2 == 0 else 2 for j in range(half)]
    if ALLOCATION == "interleaved-mrope":  # Qwen3-VL: h on j % 3 == 1 below 3h, w on j % 3 == 2 below 3w, t the rest
        hw = half * 20 // 64
        t, h, w = SECTIONS or (half - 2 * hw, hw, hw)
        return [1 if j % 3 == 1 and j < 3 * h else 2 if j % 3 == 2 and j < 3 * w else 0 for j in range(half)]
    first = half // 4
    mrope = (first, (half - first) // 2, half - first - (half - first) // 2)  # [16, 24, 24] at 64 pairs
    if ALLOCATION == "hw-alternating":  # VideoRoPE: h on odd pairs below 2h, w on even pairs from 2 below 2w
        t, h, w = SECTIONS or mrope
        return [1 if j % 2 == 1 and j < 2 * h else 2 if j % 2 == 0 and 2 <= j < 2 * w else 0 for j in range(half)]
    sections = SECTIONS or (mrope if c == 3 else [half // c] * (c - 1) + [half - (c - 1) * (half // c)])
    if sum(sections) != half:
        raise ValueError("SECTIONS %r sum to %d; the rotated dims have %d pairs" % (sections, sum(sections), half))
    return [k for k, n in enumerate(sections) for _ in range(n)]
)PY";
}

// The template with only this scheme's rule kept (blocks "#@rule name ..." to "#@end").
QByteArray keepRule(const QByteArray& source, const std::string& scheme)
{
    QByteArray out;
    bool inRule = false, keep = false;
    for (const QByteArray& line : source.split('\n')) {
        if (line.startsWith("#@rule ")) {
            const QList<QByteArray> names = line.mid(7).trimmed().split(' ');
            inRule = true;
            keep = names.contains(QByteArray::fromStdString(scheme));
            continue;
        }
        if (line.startsWith("#@end")) {
            inRule = false;
            continue;
        }
        if (!inRule || keep)
            out += line + '\n';
    }
    // Blank runs left where rules were dropped: at most two blank lines, as PEP 8 has them.
    while (out.contains("\n\n\n\n"))
        out.replace(QByteArray("\n\n\n\n"), "\n\n\n");
    return out.trimmed() + '\n';
}

} // namespace

QByteArray exportSchemeModule(const SchemeParams& p, const std::string& provenance)
{
    if (p.custom)
        throw InvalidInput("scheme", customLabel(*p.custom) + " is already a file; export-scheme writes a built-in scheme");
    validate(p);
    const std::string name = schemeName(p.kind);
    QByteArray parameters = "{";
    for (const Parameter& q : parametersOf(p))
        parameters += "\n    " + quoted(q.name) + ": (" + number(q.value) + ", " + number(q.min) + ", " + number(q.max) + "),";
    parameters += parameters == "{" ? "}" : "\n}";
    QByteArray components = "[";
    for (const std::string& c : componentNames(p.kind))
        components += (components.size() > 1 ? ", " : "") + quoted(c);
    components += "]";

    QByteArray note;
    const QByteArray allocation = allocationOf(p, &note);
    if (p.kind == SchemeKind::VideoRopePlus)
        note += "VideoRoPE++ also scales the time axis' rotary base (YaRN-V, ntk_factor " + number(p.ntkFactor) +
            "): a rotary setting, not a position,\nso this file carries the positions only.\n";
    if (p.kind == SchemeKind::XdRope)
        note += "XD-RoPE turns every pair at theta * alpha^(d/(d-2)) (NTK-alpha " + number(p.ntkAlpha) +
            "): a rotary setting, not a position. Its newline column\nand span begin/end add tokens, which a scheme "
            "file cannot: this file places the layout's own tokens,\nas RopeScope runs a model (--newline-column off).\n";
    if (p.rotary.partial != 1.0 || p.rotary.pairing != RotaryPairing::Half)
        note += "Its rotary rotates " + number(p.rotary.partial) + " of each head's dims, paired " +
            (p.rotary.pairing == RotaryPairing::Adjacent ? QByteArray("adjacent (2j, 2j+1)") : QByteArray("half (j, j+d/2)")) +
            ": rotary settings, not positions,\nso this file carries the positions only (RopeScope: --partial-rotary " +
            number(p.rotary.partial) + " --pairing " + rotaryPairingName(p.rotary.pairing) + ").\n";
    const QByteArray docstring = "\"\"\"" + QByteArray::fromStdString(name) + " as a Python scheme, exported by RopeScope:\n    " +
        QByteArray::fromStdString(provenance) +
        "\n\n"
        "positions(layout, **params) -> float64 [C, L]: RopeScope's Python scheme format (docs/USER_SCHEMES.md).\n"
        "get_rope_index(input_ids, image_grid_thw, video_grid_thw, attention_mask) -> (position_ids [C, B, L],\n"
        "rope_deltas [B, 1]) for training code, as transformers' Qwen2-VL returns them.\n"
        "python3 this_file.py text:4,image:3x3,text:2 prints the positions, one line per component.\n"
        "Needs numpy only.\n" +
        (note.isEmpty() ? QByteArray() : "\n" + note) + "\"\"\"";
    QByteArray module = keepRule(kSchemeTemplateSource, name);
    module.replace("{{DOCSTRING}}", docstring);
    module.replace("{{SCHEME}}", quoted(name));
    module.replace("{{PARAMETERS}}", parameters);
    module.replace("{{COMPONENTS}}", components);
    module.replace("{{CONSTANTS}}", constantsOf(p).trimmed());
    module.replace("{{ALLOCATION}}", allocation.trimmed());
    return module;
}

} // namespace ropescope::user_schemes

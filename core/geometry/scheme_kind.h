#pragma once
#include <optional>
#include <string>
#include <vector>

namespace ropescope::geometry {

// The seeds' schemes, then the 2025 family (JJJYmmm/Multimodal-RoPEs and each design's own code): VideoRoPE,
// HoPE, V2PE, the spatial-reset pair OmniRoPE (sectioned) / ILRoPE (interleaved), MRoPE-I with spatial
// reset, MRoPE-I (Qwen3-VL), MHRoPE, TAD-RoPE, VideoRoPE++ (YaRN-V) and MM-RoPE (Lumos-1); then the model
// families' own designs: GLM-V (GLM-4.1V / 4.6V), ERNIE-4.5-VL and XD-RoPE (HunyuanOCR / HunyuanVL).
enum class SchemeKind {
    Hard,
    Unordered,
    Mrope,
    Compact,
    Circle,
    Vrope,
    VideoRope,
    Hope,
    V2pe,
    OmniRope,
    IlRope,
    SpatialReset,
    MropeI,
    Mhrope,
    TadRope,
    VideoRopePlus,
    MmRope,
    GlmV,
    ErnieVl,
    XdRope
};

// Read from one table (scheme_registry.cpp): name, component count and summary of each built-in scheme.
const char* schemeName(SchemeKind kind);
const char* schemeSummary(SchemeKind kind); // one line for tooltips and help: "circle: Circle-RoPE, ..."
std::optional<SchemeKind> schemeFromName(const std::string& name);
const std::vector<SchemeKind>& allSchemes();
std::string schemeNameList(); // "hard, unordered, ..." for messages and help
int componentCount(SchemeKind kind);
// Names of the position components, e.g. {"t","h","w"} ({"p","w","h","t"} for xd-rope); the CSV calls them
// p0..p{C-1}.
std::vector<std::string> componentNames(SchemeKind kind);

} // namespace ropescope::geometry

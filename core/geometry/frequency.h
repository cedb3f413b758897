#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ropescope::geometry {

// Which two dims of a head frequency j turns: NeoX's half split (j, j + r/2), as Qwen and Llama rotate, or
// adjacent pairs (2j, 2j + 1), as GLM-4.1V / GLM-4.6V rotate (r: the rotated dims). Attention scores depend
// only on which frequency drives which pair, so the pairing changes no position metric; it says which dims
// of a checkpoint's q and k carry which frequency, and a model runs with its own.
enum class RotaryPairing { Half, Adjacent };
const char* rotaryPairingName(RotaryPairing pairing); // "half", "adjacent"
std::optional<RotaryPairing> rotaryPairingFromName(const std::string& name);

// Rotary frequencies: inv_freq_j = theta^(-2j/d) for j < d/2, on the dims `pairing` names.
struct RotaryConfig {
    double theta = 1e6; // Qwen2-VL / Qwen2.5-VL rope_theta
    int headDim = 128;
    // The heads a per-head allocation (MHRoPE) spreads its axes over: the KV heads (8 in its reference; a
    // model run sets its own).
    int heads = 8;
    // partial_rotary_factor: only the first rotaryDim() of each head's dims rotate (Qwen3.5 0.25, GLM-4.1V
    // 0.5); the rest pass through unturned and carry no position.
    double partial = 1.0;
    RotaryPairing pairing = RotaryPairing::Half;
    // Gemma 4's "proportional" rotary (its full layers): the rotated pairs' frequencies are theta^(-2j/headDim) over
    // the whole head, and they sit at dims j and j + headDim/2 (the other pairs turn at frequency 0), where partial
    // rotary's are theta^(-2j/rotaryDim) at j and j + rotaryDim/2.
    bool proportional = false;
    double linearFactor = 1.0; // Gemma 3's full layers ("linear" rope scaling): every frequency / factor

    int rotaryDim() const { return static_cast<int>(headDim * partial) / 2 * 2; } // truncated, then even
    int halfDim() const { return rotaryDim() / 2; }                               // the pairs that rotate
    int unrotatedDims() const { return headDim - rotaryDim(); }
    // The two dims of a head that frequency j turns.
    std::pair<int, int> pairDims(int j) const;
};

std::vector<double> inverseFrequencies(const RotaryConfig& rotary);

// Which position component c(j) drives rotary frequency j.
struct FrequencyAllocation {
    // Sectioned: contiguous blocks (M-RoPE's mrope_section). Interleaved: j mod C (VRoPE).
    // InterleavedMrope: Qwen3-VL's MRoPE-I, three components with sections [t, h, w]: pair j is h if
    // j % 3 == 1 and j < 3 h, w if j % 3 == 2 and j < 3 w, else t (h and w spread over all but the
    // lowest frequencies, t takes the rest; [24,20,20] at head_dim 128).
    // HwAlternating: VideoRoPE's (and HoPE's), three components with sections [t, h, w]: pair j is h if j is
    // odd and j < 2 h, w if j is even, 2 <= j < 2 w, else t (t keeps pair 0 and the lowest frequencies).
    // Distributed: MM-RoPE's (Lumos-1), three components, every 8 pairs T,T,H,W,H,W,H,W (2:3:3 in each
    // block of 8, so every axis spans the whole frequency range).
    // PerHead: MHRoPE's, three components with sections = heads per component [t, h, w]: the first t heads
    // rotate every pair by t, the next h by h, then w; the remaining heads (of RotaryConfig::heads) have no
    // rotary at all.
    // PerPair: a custom scheme's own table, sections[j] = the component driving pair j.
    // HwInterleaved: ERNIE-4.5-VL's, three components with sections [t, h, w]: the t lowest frequencies carry t,
    // the others alternate h (even j) and w (odd j) from the highest down ([20, 22, 22] at head_dim 128, its
    // mrope_section [22, 22, 20] in (h, w, t) order, or freq_allocation 20).
    enum class Kind { Sectioned, Interleaved, InterleavedMrope, HwAlternating, Distributed, PerHead, PerPair, HwInterleaved };

    Kind kind = Kind::Sectioned;
    int components = 1;
    std::vector<int> sections; // frequencies per component summing to d/2 (PerHead: heads per component)
    // Pairs driven by component 0 use theta * temporalThetaScale (VideoRoPE++'s YaRN-V NTK-scaled time base).
    double temporalThetaScale = 1.0;
    // Every pair uses theta * thetaScale (XD-RoPE's NTK-alpha base); it multiplies temporalThetaScale.
    double thetaScale = 1.0;

    // The component driving pair j. PerHead has none (its pairs depend on the head): throws std::logic_error.
    int componentOf(int j) const;
    std::vector<int> componentTable(int halfDim) const;
    // PerHead: each head's component, -1 for a head without rotary.
    std::vector<int> headComponents(int heads) const;
    bool perHead() const { return kind == Kind::PerHead; }
    std::string toString() const;

    static FrequencyAllocation sectioned(std::vector<int> sections);
    static FrequencyAllocation interleaved(int components);
    static FrequencyAllocation interleavedMrope(std::vector<int> sections);
    static FrequencyAllocation hwAlternating(std::vector<int> sections);
    static FrequencyAllocation distributed();
    static FrequencyAllocation hwInterleaved(std::vector<int> sections);
    static FrequencyAllocation perHeadAxes(std::vector<int> headsPerComponent);
    static FrequencyAllocation perPair(std::vector<int> pairComponents, int components);
};

// One rotary channel as the prior sees it: pair j turned by component c (-1: not turned) at invFreq, counted
// with weight (1 per pair; a per-head allocation's share of heads), so a mean over heads is a weighted sum.
struct RotaryChannel {
    int pair = 0;
    int component = 0;
    double invFreq = 0;
    double weight = 1;
};
std::vector<RotaryChannel> rotaryChannels(const RotaryConfig& rotary, const FrequencyAllocation& allocation);

// The names the CLI, session files and tables use: "sectioned", "interleaved", "interleaved-mrope",
// "hw-alternating", "distributed", "per-head".
const char* allocationKindName(FrequencyAllocation::Kind kind);
std::optional<FrequencyAllocation::Kind> allocationKindFromName(const std::string& name);

// Qwen2-VL's mrope_section [16,24,24] for head_dim 128, scaled in the same 2:3:3 ratio to other
// head dims (the remainder goes to the last sections so the sum is always d/2).
std::vector<int> defaultMropeSection(int headDim);
// ERNIE-4.5-VL's [t, h, w] for hw-interleaved, scaled to the rotated dims: [20, 22, 22] at 128.
std::vector<int> defaultHwInterleavedSection(int rotaryDim);
// A section list as help text and placeholders write it ("16,24,24"): the values come from the functions
// above, so no help text states a default of its own.
std::string sectionsText(const std::vector<int>& sections);
// Qwen3-VL's mrope_section [24,20,20] for head_dim 128, scaled to other head dims (h = w, t the rest).
std::vector<int> defaultInterleavedMropeSection(int headDim);

// MHRoPE's [2,3,3] KV heads for t/h/w at 8 heads, scaled to others (h = w = floor(3n/8), t the rest).
std::vector<int> defaultHeadSections(int heads);

// Throws InvalidInput if the allocation does not cover exactly d/2 frequencies with C components.
void validateAllocation(const FrequencyAllocation& allocation, const RotaryConfig& rotary);

} // namespace ropescope::geometry

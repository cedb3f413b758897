#pragma once
#include <optional>
#include <string>
#include <vector>

namespace ropescope::geometry {

// Rotary frequencies: inv_freq_j = theta^(-2j/d) for j < d/2, paired NeoX style (i, i + d/2).
struct RotaryConfig {
    double theta = 1e6; // Qwen2-VL / Qwen2.5-VL rope_theta
    int headDim = 128;

    int halfDim() const { return headDim / 2; }
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
    enum class Kind { Sectioned, Interleaved, InterleavedMrope, HwAlternating };

    Kind kind = Kind::Sectioned;
    int components = 1;
    std::vector<int> sections; // Sectioned and InterleavedMrope: frequencies per component, summing to d/2

    int componentOf(int j) const;
    std::vector<int> componentTable(int halfDim) const;
    std::string toString() const;

    static FrequencyAllocation sectioned(std::vector<int> sections);
    static FrequencyAllocation interleaved(int components);
    static FrequencyAllocation interleavedMrope(std::vector<int> sections);
    static FrequencyAllocation hwAlternating(std::vector<int> sections);
};

// The names the CLI, session files and tables use: "sectioned", "interleaved", "interleaved-mrope",
// "hw-alternating".
const char* allocationKindName(FrequencyAllocation::Kind kind);
std::optional<FrequencyAllocation::Kind> allocationKindFromName(const std::string& name);

// Qwen2-VL's mrope_section [16,24,24] for head_dim 128, scaled in the same 2:3:3 ratio to other
// head dims (the remainder goes to the last sections so the sum is always d/2).
std::vector<int> defaultMropeSection(int headDim);
// Qwen3-VL's mrope_section [24,20,20] for head_dim 128, scaled to other head dims (h = w, t the rest).
std::vector<int> defaultInterleavedMropeSection(int headDim);

// Throws InvalidInput if the allocation does not cover exactly d/2 frequencies with C components.
void validateAllocation(const FrequencyAllocation& allocation, const RotaryConfig& rotary);

} // namespace ropescope::geometry

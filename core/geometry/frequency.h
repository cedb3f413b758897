#pragma once
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
    enum class Kind { Sectioned, Interleaved };

    Kind kind = Kind::Sectioned;
    int components = 1;
    std::vector<int> sections; // Sectioned only: frequencies per component, summing to d/2

    // Sectioned [s0,s1,s2]: j < s0 -> 0, j < s0+s1 -> 1, ... ; Interleaved: j mod C.
    int componentOf(int j) const;
    std::vector<int> componentTable(int halfDim) const;
    std::string toString() const;

    static FrequencyAllocation sectioned(std::vector<int> sections);
    static FrequencyAllocation interleaved(int components);
};

// Qwen2-VL's mrope_section [16,24,24] for head_dim 128, scaled in the same 2:3:3 ratio to other
// head dims (the remainder goes to the last sections so the sum is always d/2).
std::vector<int> defaultMropeSection(int headDim);

// Throws InvalidInput if the allocation does not cover exactly d/2 frequencies with C components.
void validateAllocation(const FrequencyAllocation& allocation, const RotaryConfig& rotary);

} // namespace ropescope::geometry

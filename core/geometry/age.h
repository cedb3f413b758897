#pragma once
#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"
#include "core/geometry/scheme.h"

#include <string>
#include <vector>

namespace ropescope::geometry {

// The layer count an AGE schedule gets when none is given: the official Circle-RoPE code's 36 (Qwen2.5-VL-3B).
constexpr int kDefaultAgeLayers = 36;

// Alternating Geometry Encoding (Circle-RoPE sec. 4.2): which decoder layers use the scheme's own
// positions (the paper's Circle-RoPE index, 'C') and which use M-RoPE ('M').
struct AgeSchedule {
    std::string name;             // "strategy_4", or the custom pattern as given
    std::vector<bool> usesScheme; // per layer: true = the scheme ('C'), false = mrope ('M')

    int layers() const { return static_cast<int>(usesScheme.size()); }
    std::string pattern() const; // one letter per layer, e.g. "CMCM"
};

// strategy_1: all C. strategy_2: first half C (layers i with 2i < N). strategy_3: the rest C.
// strategy_4: 0-based even layers C (the official default). Otherwise a pattern of C/M letters repeated
// over the layers, e.g. "CCM". The official code hard-codes 36 layers; any count works here.
AgeSchedule parseAgeSchedule(const std::string& spec, int layers);

// The parameters layer `layer` runs with: the scheme itself or mrope with the same rotary settings.
SchemeParams layerParams(const SchemeParams& params, const AgeSchedule& schedule, int layer);

} // namespace ropescope::geometry

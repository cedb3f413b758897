#pragma once
#include "core/geometry/position_table.h"

#include <string>
#include <vector>

namespace ropescope::geometry {

// How a position table spends its rotary frequencies (the "full frequency utilisation" question of
// "Revisiting Multimodal Positional Encoding"): which axis drives each frequency pair, how far each pair
// turns across the visual grids of the layout, and how the positional prior decays along each axis.
struct FrequencyUsage {
    enum class Use {
        Wraps,    // turns more than a full circle across a grid: positions a wavelength apart look alike
        Resolves, // turns between 0.1 rad and a full circle across a grid: tells places in it apart
        Constant, // turns less than 0.1 rad across the grid (or the axis does not vary there): no signal
        Unrotated // a pair of the head that does not turn at all (Gemma 4's proportional rotary: frequency 0)
    };
    struct Pair {
        int index = 0;
        int component = 0;      // the position component (axis) that drives it; -1 for an unrotated pair
        int dimA = 0, dimB = 0; // the two dims of a head it turns (RotaryConfig::pairDims)
        double headShare = 1;   // the share of heads it turns in (per-head allocations; 1 otherwise)
        double invFreq = 0;     // radians per unit of position
        double wavelength = 0;  // 2 pi / invFreq
        double turnAcross = 0;  // radians turned across the axis's span in the visual tokens
        Use use = Use::Constant;
    };
    std::vector<std::string> axes; // component names, e.g. t, h, w
    std::vector<double> spans;     // per component: the largest spread of a visual segment's positions
    // The rotated pairs (per head: that many per axis with heads); a proportional rotary (Gemma 4's full layers) then
    // lists the head's other pairs, rotaryDim / 2 .. head_dim / 2 - 1, as Unrotated (frequency 0, on dims j and j + d/2).
    std::vector<Pair> pairs;
    // The positional prior (q = k = ones) as the distance grows along one axis alone, divided by its value at
    // distance 0: decay[c][k] at distances[k]. 1 means no positional bias at that distance.
    std::vector<double> distances;
    std::vector<std::vector<double>> decay;
};

const char* useName(FrequencyUsage::Use use); // "wraps", "resolves", "constant", "unrotated"

// Distances sampled: `samples` points from 0 to max(2 x the largest span, 16).
FrequencyUsage frequencyUsage(const PositionTable& table, int samples = 65);

} // namespace ropescope::geometry

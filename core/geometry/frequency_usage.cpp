#include "core/geometry/frequency_usage.h"

#include "core/geometry/scheme.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <map>

namespace ropescope::geometry {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kConstantBelow = 0.1; // radians across a grid: cos changes by under 0.5%

// Per component, the largest spread (max - min) of the positions of one visual segment (an image, or
// all frames of a video): the range a frequency must tell apart inside one visual input.
std::vector<double> visualSpans(const PositionTable& table)
{
    const int components = table.components();
    std::map<int, std::pair<Eigen::VectorXd, Eigen::VectorXd>> bySegment; // segment -> (min, max)
    for (const VisualBlock& b : table.blocks) {
        const Eigen::MatrixXd block = table.positions.middleRows(b.begin, b.size());
        const Eigen::VectorXd lo = block.colwise().minCoeff().transpose(), hi = block.colwise().maxCoeff().transpose();
        auto [it, added] = bySegment.try_emplace(b.segment, lo, hi);
        if (!added) {
            it->second.first = it->second.first.cwiseMin(lo);
            it->second.second = it->second.second.cwiseMax(hi);
        }
    }
    std::vector<double> spans(static_cast<size_t>(components), 0.0);
    for (const auto& [segment, range] : bySegment)
        for (int c = 0; c < components; ++c)
            spans[static_cast<size_t>(c)] = std::max(spans[static_cast<size_t>(c)], range.second[c] - range.first[c]);
    return spans;
}

} // namespace

const char* useName(FrequencyUsage::Use use)
{
    switch (use) {
    case FrequencyUsage::Use::Wraps: return "wraps";
    case FrequencyUsage::Use::Resolves: return "resolves";
    case FrequencyUsage::Use::Constant: return "constant";
    case FrequencyUsage::Use::Unrotated: return "unrotated";
    }
    return "constant";
}

FrequencyUsage frequencyUsage(const PositionTable& table, int samples)
{
    FrequencyUsage u;
    u.axes = componentNames(table.scheme);
    for (int c = static_cast<int>(u.axes.size()); c < table.components(); ++c)
        u.axes.push_back("p" + std::to_string(c));
    u.spans = visualSpans(table);

    // One entry per rotary channel that turns; a per-head allocation lists each axis' pairs once per head group.
    const std::vector<RotaryChannel> channels = rotaryChannels(table.rotary, table.allocation);
    for (const RotaryChannel& ch : channels) {
        if (ch.component < 0)
            continue;
        FrequencyUsage::Pair p;
        p.index = ch.pair;
        std::tie(p.dimA, p.dimB) = table.rotary.pairDims(ch.pair);
        p.component = std::min(ch.component, table.components() - 1);
        p.headShare = ch.weight;
        p.invFreq = ch.invFreq;
        p.wavelength = kTwoPi / ch.invFreq;
        p.turnAcross = ch.invFreq * u.spans[static_cast<size_t>(p.component)];
        p.use = p.turnAcross > kTwoPi       ? FrequencyUsage::Use::Wraps
            : p.turnAcross < kConstantBelow ? FrequencyUsage::Use::Constant
                                            : FrequencyUsage::Use::Resolves;
        u.pairs.push_back(p);
    }
    if (table.rotary.proportional && table.rotary.pairing == RotaryPairing::Half) // the head's pairs that turn at frequency 0
        for (int j = table.rotary.halfDim(); j < table.rotary.headDim / 2; ++j) {
            FrequencyUsage::Pair p;
            p.index = j;
            std::tie(p.dimA, p.dimB) = table.rotary.pairDims(j);
            p.component = -1;
            p.wavelength = std::numeric_limits<double>::infinity();
            p.use = FrequencyUsage::Use::Unrotated;
            u.pairs.push_back(p);
        }

    // Moving by d along axis c turns only c's channels: prior(d) / prior(0) = the weighted mean of cos, the
    // channels of other axes (and heads without rotary) staying at 1.
    const double largest = u.spans.empty() ? 0.0 : *std::max_element(u.spans.begin(), u.spans.end());
    const double reach = std::max(2.0 * largest, 16.0);
    samples = std::max(samples, 2);
    for (int k = 0; k < samples; ++k)
        u.distances.push_back(reach * k / (samples - 1));
    double total = 0;
    for (const RotaryChannel& ch : channels)
        total += ch.weight;
    u.decay.assign(static_cast<size_t>(table.components()), std::vector<double>(static_cast<size_t>(samples), 0.0));
    for (int c = 0; c < table.components(); ++c)
        for (int k = 0; k < samples; ++k) {
            double sum = 0;
            for (const RotaryChannel& ch : channels)
                sum += ch.weight * (ch.component == c ? std::cos(ch.invFreq * u.distances[static_cast<size_t>(k)]) : 1.0);
            u.decay[static_cast<size_t>(c)][static_cast<size_t>(k)] = sum / total;
        }
    return u;
}

} // namespace ropescope::geometry

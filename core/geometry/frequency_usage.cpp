#include "frequency_usage.h"

#include "scheme.h"

#include <algorithm>
#include <cmath>
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
    }
    return "constant";
}

FrequencyUsage frequencyUsage(const PositionTable& table, int samples)
{
    FrequencyUsage u;
    const auto kind = schemeFromName(table.scheme);
    u.axes = kind ? componentNames(*kind) : std::vector<std::string>{};
    for (int c = static_cast<int>(u.axes.size()); c < table.components(); ++c)
        u.axes.push_back("p" + std::to_string(c));
    u.spans = visualSpans(table);

    const std::vector<double> invFreq = inverseFrequencies(table.rotary);
    const std::vector<int> component = table.allocation.componentTable(table.rotary.halfDim());
    for (size_t j = 0; j < invFreq.size(); ++j) {
        FrequencyUsage::Pair p;
        p.index = static_cast<int>(j);
        p.component = std::min(component[j], table.components() - 1);
        p.invFreq = invFreq[j];
        p.wavelength = kTwoPi / invFreq[j];
        p.turnAcross = invFreq[j] * u.spans[static_cast<size_t>(p.component)];
        p.use = p.turnAcross > kTwoPi ? FrequencyUsage::Use::Wraps
                : p.turnAcross < kConstantBelow ? FrequencyUsage::Use::Constant
                                                : FrequencyUsage::Use::Resolves;
        u.pairs.push_back(p);
    }

    // Moving by d along axis c turns only c's pairs: prior(d) / prior(0) = mean over all pairs of cos.
    const double largest = u.spans.empty() ? 0.0 : *std::max_element(u.spans.begin(), u.spans.end());
    const double reach = std::max(2.0 * largest, 16.0);
    samples = std::max(samples, 2);
    for (int k = 0; k < samples; ++k)
        u.distances.push_back(reach * k / (samples - 1));
    u.decay.assign(static_cast<size_t>(table.components()), std::vector<double>(static_cast<size_t>(samples), 0.0));
    for (int c = 0; c < table.components(); ++c)
        for (int k = 0; k < samples; ++k) {
            double sum = 0;
            for (const FrequencyUsage::Pair& p : u.pairs)
                sum += p.component == c ? std::cos(p.invFreq * u.distances[static_cast<size_t>(k)]) : 1.0;
            u.decay[static_cast<size_t>(c)][static_cast<size_t>(k)] = sum / static_cast<double>(u.pairs.size());
        }
    return u;
}

} // namespace ropescope::geometry

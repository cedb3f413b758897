#include "capi/given_positions.h"

#include "core/geometry/errors.h"

#include <cstdint>
#include <utility>

namespace ropescope::capi {

GivenPositions::GivenPositions(std::string label, std::vector<std::string> componentNames, Eigen::MatrixXd positions,
                               std::optional<std::vector<int>> pairs)
    : label_(std::move(label)), names_(std::move(componentNames)), positions_(std::move(positions)), pairs_(std::move(pairs))
{ }

std::optional<std::vector<int>> GivenPositions::allocation(int headDim, int halfDim) const
{
    (void)headDim;
    if (pairs_ && static_cast<int>(pairs_->size()) == halfDim)
        return pairs_;
    return std::nullopt;
}

Eigen::MatrixXd GivenPositions::positions(const geometry::Layout& layout, const geometry::CustomValues& values) const
{
    (void)layout;
    (void)values;
    return positions_; // its shape and values are checked against the layout by buildPositionTable
}

std::vector<int> pairComponents(const std::string& kind, const std::vector<int>& sections, int components, int halfDim)
{
    using geometry::FrequencyAllocation;
    using geometry::InvalidInput;
    auto count = [](const std::vector<int>& v) { return std::to_string(v.size()); };
    if (kind == "per-pair") { // the component of every pair, as given
        if (static_cast<int>(sections.size()) != halfDim)
            throw InvalidInput("allocation", "per-pair names " + count(sections) + " pairs; the head turns " + std::to_string(halfDim));
        for (int c : sections)
            if (c < -1 || c >= components)
                throw InvalidInput("allocation", "a pair's component " + std::to_string(c) + " is not one of the positions'");
        return sections;
    }
    const std::optional<FrequencyAllocation::Kind> k = geometry::allocationKindFromName(kind);
    if (!k || *k == FrequencyAllocation::Kind::PerHead)
        throw InvalidInput("allocation", "'" + kind + "' is not an allocation of pairs to components");
    if (*k == FrequencyAllocation::Kind::Interleaved)
        return FrequencyAllocation::interleaved(components).componentTable(halfDim);
    if (components != 3 && *k != FrequencyAllocation::Kind::Sectioned)
        throw InvalidInput("allocation", kind + " drives three components (t, h, w); the positions have " + std::to_string(components));
    if (*k == FrequencyAllocation::Kind::Distributed)
        return FrequencyAllocation::distributed().componentTable(halfDim);
    // The sectioned kinds: one count per component, every pair counted once.
    int64_t sum = 0; // int32 counts: their sum in 64 bits cannot wrap (2^31-1 twice and 66 is not 64)
    for (int s : sections) {
        if (s < 0)
            throw InvalidInput("allocation", "a section of " + std::to_string(s) + " pairs");
        sum += s;
    }
    if (static_cast<int>(sections.size()) != components || sum != static_cast<int64_t>(halfDim))
        throw InvalidInput("allocation",
                           kind + " needs " + std::to_string(components) + " sections summing to " + std::to_string(halfDim) +
                               " pairs, got " + count(sections) + " summing to " + std::to_string(sum));
    const FrequencyAllocation a = *k == FrequencyAllocation::Kind::Sectioned ? FrequencyAllocation::sectioned(sections)
        : *k == FrequencyAllocation::Kind::InterleavedMrope                  ? FrequencyAllocation::interleavedMrope(sections)
        : *k == FrequencyAllocation::Kind::HwAlternating                     ? FrequencyAllocation::hwAlternating(sections)
                                                                             : FrequencyAllocation::hwInterleaved(sections);
    return a.componentTable(halfDim);
}

} // namespace ropescope::capi

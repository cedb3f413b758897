#include "core/geometry/frequency.h"

#include "core/geometry/errors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace ropescope::geometry {

const char* rotaryPairingName(RotaryPairing pairing)
{
    return pairing == RotaryPairing::Adjacent ? "adjacent" : "half";
}

std::optional<RotaryPairing> rotaryPairingFromName(const std::string& name)
{
    if (name == "half")
        return RotaryPairing::Half;
    if (name == "adjacent")
        return RotaryPairing::Adjacent;
    return std::nullopt;
}

std::pair<int, int> RotaryConfig::pairDims(int j) const
{
    if (pairing == RotaryPairing::Adjacent)
        return {2 * j, 2 * j + 1};
    return {j, j + (proportional ? headDim / 2 : halfDim())};
}

std::vector<double> inverseFrequencies(const RotaryConfig& rotary)
{
    std::vector<double> inv(static_cast<size_t>(rotary.halfDim()));
    for (int j = 0; j < rotary.halfDim(); ++j)
        inv[static_cast<size_t>(j)] =
            std::pow(rotary.theta, -2.0 * j / (rotary.proportional ? rotary.headDim : rotary.rotaryDim())) / rotary.linearFactor;
    return inv;
}

int FrequencyAllocation::componentOf(int j) const
{
    if (kind == Kind::Interleaved)
        return j % components;
    if (kind == Kind::Distributed) {
        static const int pattern[8] = {0, 0, 1, 2, 1, 2, 1, 2};
        return pattern[j % 8];
    }
    if (kind == Kind::PerHead) // a programming error, not bad input: the answer depends on the head
        throw std::logic_error("componentOf: a per-head allocation has no component per pair; use headComponents");
    if (kind == Kind::PerPair)
        return j >= 0 && j < static_cast<int>(sections.size()) ? sections[static_cast<size_t>(j)] : 0;
    if (kind == Kind::InterleavedMrope) {
        if (j % 3 == 1 && j < 3 * sections[1])
            return 1;
        if (j % 3 == 2 && j < 3 * sections[2])
            return 2;
        return 0;
    }
    if (kind == Kind::HwInterleaved) {                            // ERNIE: h on even, w on odd frequencies above the t lowest
        const int half = sections[0] + sections[1] + sections[2]; // the frequencies (validateAllocation checks)
        if (j >= half - sections[0])
            return 0;
        return j % 2 == 0 ? 1 : 2;
    }
    if (kind == Kind::HwAlternating) {
        if (j % 2 == 1 && j < 2 * sections[1])
            return 1;
        if (j % 2 == 0 && j >= 2 && j < 2 * sections[2])
            return 2;
        return 0;
    }
    int end = 0;
    for (size_t c = 0; c < sections.size(); ++c) {
        end += sections[c];
        if (j < end)
            return static_cast<int>(c);
    }
    return components - 1;
}

std::vector<int> FrequencyAllocation::componentTable(int halfDim) const
{
    std::vector<int> table(static_cast<size_t>(halfDim));
    for (int j = 0; j < halfDim; ++j)
        table[static_cast<size_t>(j)] = componentOf(j);
    return table;
}

std::vector<int> FrequencyAllocation::headComponents(int heads) const
{
    std::vector<int> out(static_cast<size_t>(std::max(heads, 0)), -1);
    size_t h = 0;
    for (size_t c = 0; c < sections.size(); ++c)
        for (int k = 0; k < sections[c] && h < out.size(); ++k)
            out[h++] = static_cast<int>(c);
    return out;
}

std::string FrequencyAllocation::toString() const
{
    std::string out;
    if (kind == Kind::Interleaved)
        out = "interleaved(" + std::to_string(components) + ")";
    else if (kind == Kind::Distributed)
        out = "distributed(TTHWHWHW)";
    else if (kind == Kind::PerPair) {
        out = "per-pair(";
        for (size_t j = 0; j < sections.size(); ++j)
            out += std::to_string(sections[j]);
        out += ")";
    } else {
        out = std::string(allocationKindName(kind)) + "[";
        for (size_t i = 0; i < sections.size(); ++i)
            out += (i ? "," : "") + std::to_string(sections[i]);
        out += "]";
    }
    if (temporalThetaScale != 1.0)
        out += " t-theta x" + shortNumber(temporalThetaScale);
    if (thetaScale != 1.0) { // six digits name it (the scale itself is compared where identity matters)
        char scale[32];
        std::snprintf(scale, sizeof scale, "%.6g", thetaScale);
        out += std::string(" theta x") + scale;
    }
    return out;
}

std::vector<RotaryChannel> rotaryChannels(const RotaryConfig& rotary, const FrequencyAllocation& allocation)
{
    RotaryConfig base = rotary;
    base.theta = rotary.theta * allocation.thetaScale;
    const std::vector<double> inv = inverseFrequencies(base);
    RotaryConfig scaled = base;
    scaled.theta = base.theta * allocation.temporalThetaScale;
    const std::vector<double> invTime = allocation.temporalThetaScale != 1.0 ? inverseFrequencies(scaled) : inv;
    std::vector<RotaryChannel> out;
    const int half = rotary.halfDim();
    if (!allocation.perHead()) {
        for (int j = 0; j < half; ++j) {
            const int c = allocation.componentOf(j);
            out.push_back({j, c, c == 0 ? invTime[static_cast<size_t>(j)] : inv[static_cast<size_t>(j)], 1.0});
        }
        return out;
    }
    // Per head: the prior averaged over heads; a component's pairs count with its share of the heads.
    const double heads = std::max(rotary.heads, 1);
    long long assigned = 0;
    for (size_t c = 0; c < allocation.sections.size(); ++c) {
        assigned += allocation.sections[c];
        if (allocation.sections[c] > 0)
            for (int j = 0; j < half; ++j)
                out.push_back({j, static_cast<int>(c), c == 0 ? invTime[static_cast<size_t>(j)] : inv[static_cast<size_t>(j)],
                               allocation.sections[c] / heads});
    }
    if (assigned < rotary.heads)
        for (int j = 0; j < half; ++j)
            out.push_back({j, -1, inv[static_cast<size_t>(j)], static_cast<double>(rotary.heads - assigned) / heads});
    return out;
}

FrequencyAllocation FrequencyAllocation::sectioned(std::vector<int> sections)
{
    FrequencyAllocation a;
    a.kind = Kind::Sectioned;
    a.components = static_cast<int>(sections.size());
    a.sections = std::move(sections);
    return a;
}

FrequencyAllocation FrequencyAllocation::interleaved(int components)
{
    FrequencyAllocation a;
    a.kind = Kind::Interleaved;
    a.components = components;
    return a;
}

FrequencyAllocation FrequencyAllocation::interleavedMrope(std::vector<int> sections)
{
    FrequencyAllocation a;
    a.kind = Kind::InterleavedMrope;
    a.components = 3;
    a.sections = std::move(sections);
    return a;
}

FrequencyAllocation FrequencyAllocation::hwAlternating(std::vector<int> sections)
{
    FrequencyAllocation a = interleavedMrope(std::move(sections));
    a.kind = Kind::HwAlternating;
    return a;
}

FrequencyAllocation FrequencyAllocation::hwInterleaved(std::vector<int> sections)
{
    FrequencyAllocation a = interleavedMrope(std::move(sections));
    a.kind = Kind::HwInterleaved;
    return a;
}

FrequencyAllocation FrequencyAllocation::distributed()
{
    FrequencyAllocation a;
    a.kind = Kind::Distributed;
    a.components = 3;
    return a;
}

FrequencyAllocation FrequencyAllocation::perHeadAxes(std::vector<int> headsPerComponent)
{
    FrequencyAllocation a = interleavedMrope(std::move(headsPerComponent));
    a.kind = Kind::PerHead;
    return a;
}

FrequencyAllocation FrequencyAllocation::perPair(std::vector<int> pairComponents, int components)
{
    FrequencyAllocation a;
    a.kind = Kind::PerPair;
    a.components = components;
    a.sections = std::move(pairComponents);
    return a;
}

const char* allocationKindName(FrequencyAllocation::Kind kind)
{
    switch (kind) {
    case FrequencyAllocation::Kind::Sectioned: return "sectioned";
    case FrequencyAllocation::Kind::Interleaved: return "interleaved";
    case FrequencyAllocation::Kind::InterleavedMrope: return "interleaved-mrope";
    case FrequencyAllocation::Kind::HwAlternating: return "hw-alternating";
    case FrequencyAllocation::Kind::Distributed: return "distributed";
    case FrequencyAllocation::Kind::PerHead: return "per-head";
    case FrequencyAllocation::Kind::PerPair: return "per-pair";
    case FrequencyAllocation::Kind::HwInterleaved: return "hw-interleaved";
    }
    return "sectioned";
}

std::optional<FrequencyAllocation::Kind> allocationKindFromName(const std::string& name)
{
    for (auto kind : {FrequencyAllocation::Kind::Sectioned, FrequencyAllocation::Kind::Interleaved,
                      FrequencyAllocation::Kind::InterleavedMrope, FrequencyAllocation::Kind::HwAlternating,
                      FrequencyAllocation::Kind::Distributed, FrequencyAllocation::Kind::PerHead, FrequencyAllocation::Kind::HwInterleaved})
        if (name == allocationKindName(kind))
            return kind;
    return std::nullopt;
}

std::vector<int> defaultHwInterleavedSection(int rotaryDim)
{
    const int half = rotaryDim / 2;
    const int t = half * 20 / 64; // 20 of 64
    return {t, (half - t + 1) / 2, (half - t) / 2};
}

std::vector<int> defaultInterleavedMropeSection(int headDim)
{
    const int half = headDim / 2;
    const int hw = half * 20 / 64; // 20 of 64
    return {half - 2 * hw, hw, hw};
}

std::string sectionsText(const std::vector<int>& sections)
{
    std::string text;
    for (size_t i = 0; i < sections.size(); ++i)
        text += (i ? "," : "") + std::to_string(sections[i]);
    return text;
}

std::vector<int> defaultMropeSection(int headDim)
{
    const int half = headDim / 2;
    const int first = half / 4; // 16 of 64
    const int rest = half - first;
    return {first, rest / 2, rest - rest / 2};
}

std::vector<int> defaultHeadSections(int heads)
{
    const int hw = 3 * heads / 8;
    return {heads - 2 * hw, hw, hw};
}

void validateAllocation(const FrequencyAllocation& allocation, const RotaryConfig& rotary)
{
    if (!(rotary.theta > 1.0) || !std::isfinite(rotary.theta))
        throw InvalidInput("theta", "must be a finite number above 1, got " + shortNumber(rotary.theta));
    if (rotary.headDim < 2 || rotary.headDim % 2 != 0 || rotary.headDim > 4096)
        throw InvalidInput("head_dim", "must be an even number from 2 to 4096, got " + std::to_string(rotary.headDim));
    if (!(rotary.partial > 0 && rotary.partial <= 1) || rotary.rotaryDim() < 2)
        throw InvalidInput("partial_rotary",
                           "must leave at least one rotating pair: a fraction in (0, 1] of head_dim " + std::to_string(rotary.headDim) +
                               ", got " + shortNumber(rotary.partial));
    if (!(allocation.thetaScale >= 1.0 && allocation.thetaScale <= 1e12))
        throw InvalidInput("ntk_alpha", "the base scale must be from 1 to 1e12, got " + shortNumber(allocation.thetaScale));
    if (!(allocation.temporalThetaScale >= 1.0 && allocation.temporalThetaScale <= 1e6))
        throw InvalidInput("ntk_factor",
                           "the time axis' base scale must be from 1 to 1e6, got " + shortNumber(allocation.temporalThetaScale));
    if (allocation.kind == FrequencyAllocation::Kind::Interleaved || allocation.kind == FrequencyAllocation::Kind::Distributed)
        return;
    if (allocation.kind == FrequencyAllocation::Kind::PerPair) {
        if (static_cast<int>(allocation.sections.size()) != rotary.halfDim())
            throw InvalidInput("allocation",
                               "names a component for " + std::to_string(allocation.sections.size()) + " pairs; head_dim " +
                                   std::to_string(rotary.headDim) + " rotates " + std::to_string(rotary.halfDim()));
        for (int c : allocation.sections)
            if (c < 0 || c >= allocation.components)
                throw InvalidInput("allocation",
                                   "component " + std::to_string(c) + " is not one of the scheme's " +
                                       std::to_string(allocation.components) + " (0.." + std::to_string(allocation.components - 1) + ")");
        return;
    }
    if (allocation.kind == FrequencyAllocation::Kind::PerHead) {
        if (rotary.heads < 1 || rotary.heads > 1024)
            throw InvalidInput("kv_heads", "must be from 1 to 1024, got " + std::to_string(rotary.heads));
        long long heads = 0;
        for (int s : allocation.sections) {
            if (s < 0 || s > 1024)
                throw InvalidInput("sections", "per-head sections count heads, each from 0 to 1024");
            heads += s;
        }
        if (allocation.sections.size() != 3)
            throw InvalidInput("sections",
                               "per-head needs 3 sections (heads for t, h, w), got " + std::to_string(allocation.sections.size()));
        if (heads > rotary.heads)
            throw InvalidInput("sections",
                               "per-head sections give " + std::to_string(heads) + " heads but there are only " +
                                   std::to_string(rotary.heads) + " (--kv-heads)");
        // A split with no h or no w head cannot tell rows or columns apart (2 heads gave [2, 0, 0]).
        if (allocation.sections[1] == 0 || allocation.sections[2] == 0)
            throw InvalidInput(allocation.sections == defaultHeadSections(rotary.heads) ? "kv_heads" : "sections",
                               "the per-head split [" + std::to_string(allocation.sections[0]) + "," +
                                   std::to_string(allocation.sections[1]) + "," + std::to_string(allocation.sections[2]) + "] of " +
                                   std::to_string(rotary.heads) +
                                   " heads leaves no head turning by h or w; MHRoPE needs at least 3 heads (the paper splits 8 as 2,3,3)");
        return;
    }
    long long sum = 0; // int could wrap on hostile sections
    for (int s : allocation.sections) {
        if (s < 0 || s > 4096)
            throw InvalidInput("sections", "each section must be from 0 to 4096");
        sum += s;
    }
    if (static_cast<int>(allocation.sections.size()) != allocation.components)
        throw InvalidInput(
            "sections", "needs " + std::to_string(allocation.components) + " sections, got " + std::to_string(allocation.sections.size()));
    // Pairs j = 1, 4, 7, ... take h and j = 2, 5, 8, ... take w (below half): (half + 1) / 3 and half / 3 of
    // them, e.g. 11 and 10 of Qwen3.5's 32 rotary pairs (its sections [11, 11, 10]).
    if (allocation.kind == FrequencyAllocation::Kind::InterleavedMrope &&
        (3LL * allocation.sections[1] > rotary.halfDim() + 1 || 3LL * allocation.sections[2] > rotary.halfDim()))
        throw InvalidInput("sections",
                           "interleaved-mrope places h and w on every third of the " + std::to_string(rotary.halfDim()) +
                               " frequencies, so h may not exceed " + std::to_string((rotary.halfDim() + 1) / 3) + " and w " +
                               std::to_string(rotary.halfDim() / 3));
    if (allocation.kind == FrequencyAllocation::Kind::HwAlternating &&
        2LL * std::max(allocation.sections[1], allocation.sections[2]) > rotary.halfDim())
        throw InvalidInput("sections",
                           "hw-alternating places h and w on every other of the " + std::to_string(rotary.halfDim()) +
                               " frequencies, so neither may exceed " + std::to_string(rotary.halfDim() / 2));
    if (allocation.kind == FrequencyAllocation::Kind::HwInterleaved && sum == rotary.halfDim()) {
        const int above = rotary.halfDim() - allocation.sections[0];
        if (allocation.sections[1] != (above + 1) / 2 || allocation.sections[2] != above / 2)
            throw InvalidInput("sections",
                               "hw-interleaved alternates h and w over the " + std::to_string(above) + " frequencies above t's " +
                                   std::to_string(allocation.sections[0]) + ", so h must be " + std::to_string((above + 1) / 2) +
                                   " and w " + std::to_string(above / 2));
    }
    if (sum != rotary.halfDim())
        throw InvalidInput("sections",
                           "sum to " + std::to_string(sum) + " but head_dim " + std::to_string(rotary.headDim) +
                               (rotary.rotaryDim() < rotary.headDim ? " rotated by " + std::to_string(rotary.rotaryDim()) : std::string()) +
                               " has " + std::to_string(rotary.halfDim()) + " frequencies");
}

} // namespace ropescope::geometry

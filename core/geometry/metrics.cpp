#include "core/geometry/metrics.h"

#include "core/geometry/errors.h"
#include "core/geometry/frequency.h"
#include "core/geometry/parallel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>

namespace ropescope::geometry {
namespace {

constexpr int kMaxComponents = 4;

struct Columns {
    std::array<const double*, kMaxComponents> data{};
    int count = 0;

    explicit Columns(const PositionTable& t) : count(t.components())
    {
        for (int c = 0; c < count; ++c)
            data[static_cast<size_t>(c)] = t.positions.col(c).data();
    }
    std::array<double, kMaxComponents> point(int token) const
    {
        std::array<double, kMaxComponents> p{};
        for (int c = 0; c < count; ++c)
            p[static_cast<size_t>(c)] = data[static_cast<size_t>(c)][token];
        return p;
    }
};

// Distances from `from` to tokens [begin, begin + n) into out[0, n); returns their sum.
// Eigen array expressions vectorise the square root and the reduction (plain loops cannot reorder the sum).
double distancesTo(const Columns& cols, const std::array<double, kMaxComponents>& from, int begin, int n, double* out)
{
    using Column = Eigen::Map<const Eigen::ArrayXd>;
    auto axis = [&](int c) { return Column(cols.data[static_cast<size_t>(c)] + begin, n) - from[static_cast<size_t>(c)]; };
    Eigen::Map<Eigen::ArrayXd> d(out, n);
    switch (cols.count) {
    case 1: d = axis(0).abs(); break;
    case 2: d = (axis(0).square() + axis(1).square()).sqrt(); break;
    case 3: d = (axis(0).square() + axis(1).square() + axis(2).square()).sqrt(); break;
    default: d = (axis(0).square() + axis(1).square() + axis(2).square() + axis(3).square()).sqrt(); break;
    }
    return d.sum();
}

void requireTextAndVisual(const PositionTable& table)
{
    if (table.textTokens.empty())
        throw InvalidInput("layout '" + table.layout.toString() + "' has no text tokens");
    if (table.blocks.empty())
        throw InvalidInput("layout '" + table.layout.toString() + "' has no image or video tokens");
    if (table.components() > kMaxComponents)
        throw InvalidInput("metrics support at most 4 position components");
}

void requireTextToken(const PositionTable& table, int token)
{
    if (token < 0 || token >= table.size() || !table.isText(token))
        throw InvalidInput("token " + std::to_string(token) + " is not a text token of the layout");
}

} // namespace

PtdResult computePtd(const PositionTable& table)
{
    requireTextAndVisual(table);
    const int texts = static_cast<int>(table.textTokens.size());
    const double pairs = static_cast<double>(texts) * static_cast<double>(table.visualTokenCount());
    if (pairs > static_cast<double>(kMaxPtdPairs))
        throw InvalidInput("PTD of this layout compares " + std::to_string(texts) + " text tokens with " +
                           std::to_string(table.visualTokenCount()) + " visual tokens (" + shortNumber(pairs) +
                           " distances); the limit is " + shortNumber(static_cast<double>(kMaxPtdPairs)) +
                           ": use fewer text or visual tokens");
    const Columns cols(table);
    const int blocks = static_cast<int>(table.blocks.size());
    PtdResult result;
    result.perToken.resize(texts);
    result.profiles.resize(texts, 4);
    const double visualCount = table.visualTokenCount();

    int largestBlock = 0;
    for (const VisualBlock& b : table.blocks)
        largestBlock = std::max(largestBlock, b.size());
    const double workPerText = static_cast<double>(table.visualTokenCount()) * 2.0;

    // Memory stays linear in the tokens: each chunk of text tokens sums its own per-block deviations (one
    // vector per thread, not a text x blocks matrix, which a layout of many small images made quadratic).
    std::mutex mutex;
    std::vector<std::pair<int, std::vector<double>>> chunkSums; // (first text token, per-block sums)
    parallelFor(texts, workPerText, [&](int begin, int end) {
        std::vector<double> buffer(static_cast<size_t>(largestBlock));
        std::vector<double> blockSums(static_cast<size_t>(blocks), 0.0);
        for (int ti = begin; ti < end; ++ti) {
            const auto from = cols.point(table.textTokens[static_cast<size_t>(ti)]);
            double lo = INFINITY, hi = -INFINITY, sum = 0, sumSquares = 0, deviations = 0;
            for (int bi = 0; bi < blocks; ++bi) {
                const VisualBlock& b = table.blocks[static_cast<size_t>(bi)];
                const int n = b.size();
                const double blockSum = distancesTo(cols, from, b.begin, n, buffer.data());
                const double mean = blockSum / n;
                const Eigen::Map<const Eigen::ArrayXd> d(buffer.data(), n);
                const double deviation = (d - mean).abs().mean();
                blockSums[static_cast<size_t>(bi)] += deviation;
                deviations += deviation;
                lo = std::min(lo, d.minCoeff());
                hi = std::max(hi, d.maxCoeff());
                sum += blockSum;
                sumSquares += d.square().sum();
            }
            result.perToken(ti) = deviations / blocks;
            const double mean = sum / visualCount;
            result.profiles.row(ti) << lo, mean, hi, std::sqrt(std::max(0.0, sumSquares / visualCount - mean * mean));
        }
        const std::lock_guard<std::mutex> lock(mutex);
        chunkSums.emplace_back(begin, std::move(blockSums));
    });

    // Chunks are added in token order, so the result does not depend on which thread finished first.
    std::sort(chunkSums.begin(), chunkSums.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    result.perBlock.assign(static_cast<size_t>(blocks), 0.0);
    for (const auto& [first, sums] : chunkSums)
        for (size_t bi = 0; bi < sums.size(); ++bi)
            result.perBlock[bi] += sums[bi];
    for (double& v : result.perBlock)
        v /= texts;
    result.mean = std::accumulate(result.perBlock.begin(), result.perBlock.end(), 0.0) / blocks;
    return result;
}

DistanceProfile distanceProfile(const PositionTable& table, int textToken)
{
    requireTextAndVisual(table);
    requireTextToken(table, textToken);
    const Columns cols(table);
    const auto from = cols.point(textToken);
    std::vector<double> d;
    d.reserve(static_cast<size_t>(table.visualTokenCount()));
    for (const VisualBlock& b : table.blocks) {
        const size_t at = d.size();
        d.resize(at + static_cast<size_t>(b.size()));
        distancesTo(cols, from, b.begin, b.size(), d.data() + at);
    }
    const Eigen::Map<const Eigen::ArrayXd> a(d.data(), static_cast<Eigen::Index>(d.size()));
    DistanceProfile p;
    p.min = a.minCoeff();
    p.max = a.maxCoeff();
    p.mean = a.mean();
    p.stddev = std::sqrt((a - p.mean).square().mean());
    return p;
}

PriorMap positionalPrior(const PositionTable& table, int textToken)
{
    requireTextAndVisual(table);
    requireTextToken(table, textToken);
    const std::vector<RotaryChannel> channels = rotaryChannels(table.rotary, table.allocation);
    const Columns cols(table);
    const auto from = cols.point(textToken);

    PriorMap map;
    map.textToken = textToken;
    map.values.resize(table.visualTokenCount());
    Eigen::Index out = 0;
    for (const VisualBlock& b : table.blocks) {
        for (int i = b.begin; i < b.end(); ++i) {
            double sum = 0;
            for (const RotaryChannel& ch : channels) {
                const auto c = static_cast<size_t>(ch.component);
                sum += ch.component < 0 ? ch.weight : ch.weight * std::cos(ch.invFreq * (from[c] - cols.data[c][i]));
            }
            map.values[out++] = 2.0 * sum;
        }
    }
    map.min = map.values.minCoeff();
    map.max = map.values.maxCoeff();
    map.spread = map.max - map.min;
    map.stddev = std::sqrt((map.values.array() - map.values.mean()).square().mean());
    return map;
}

Crowding visualCrowding(const PositionTable& table, double eps)
{
    Crowding result;
    result.minPairDistance = std::numeric_limits<double>::infinity();
    const Columns cols(table);
    auto distance = [&](int a, int b) {
        double d2 = 0;
        for (int c = 0; c < cols.count; ++c) {
            const double diff = cols.data[static_cast<size_t>(c)][a] - cols.data[static_cast<size_t>(c)][b];
            d2 += diff * diff;
        }
        return std::sqrt(d2);
    };

    // Blocks of one segment are adjacent; gather each visual segment's tokens.
    size_t bi = 0;
    while (bi < table.blocks.size()) {
        const int seg = table.blocks[bi].segment;
        const int begin = table.blocks[bi].begin;
        int end = begin;
        while (bi < table.blocks.size() && table.blocks[bi].segment == seg)
            end = table.blocks[bi++].end();

        // Sweep along the component with the widest spread: only pairs closer than the best distance so
        // far along that axis can be closer in space.
        int axis = 0;
        double widest = -1;
        for (int c = 0; c < cols.count; ++c) {
            const auto column = table.positions.col(c).segment(begin, end - begin);
            const double spread = column.maxCoeff() - column.minCoeff();
            if (spread > widest) {
                widest = spread;
                axis = c;
            }
        }
        const double* x = cols.data[static_cast<size_t>(axis)];
        std::vector<int> order(static_cast<size_t>(end - begin));
        std::iota(order.begin(), order.end(), begin);
        std::sort(order.begin(), order.end(), [x](int a, int b) { return x[a] < x[b]; });

        for (size_t j = 0; j < order.size(); ++j) {
            for (size_t i = j; i-- > 0;) {
                if (x[order[j]] - x[order[i]] >= eps)
                    break;
                if (distance(order[i], order[j]) < eps) {
                    ++result.collisions;
                    break;
                }
            }
            for (size_t i = j + 1; i < order.size() && x[order[i]] - x[order[j]] < result.minPairDistance; ++i) {
                const double d = distance(order[i], order[j]);
                if (d < result.minPairDistance) {
                    result.minPairDistance = d;
                    result.tokenA = std::min(order[i], order[j]);
                    result.tokenB = std::max(order[i], order[j]);
                }
            }
        }
    }
    return result;
}

} // namespace ropescope::geometry

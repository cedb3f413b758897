#pragma once
#include "core/geometry/position_table.h"

#include <Eigen/Core>

#include <vector>

namespace ropescope::geometry {

// Per-text-token distance deviation (PTD, Circle-RoPE eq. 1) in the scheme's native space: for each text
// token, the mean absolute deviation of its Euclidean distances to the tokens of one visual block
// (an image, or a video frame); PTD of a block is the mean over text tokens, the headline value the mean
// over blocks. Throws InvalidInput when the table has no text or no visual tokens.
struct PtdResult {
    double mean = 0.0;
    std::vector<double> perBlock; // one per PositionTable::blocks entry
    // per text token: its mean absolute deviation averaged over the blocks (a vector, not text x blocks, so
    // memory stays linear in the tokens however many images a layout holds)
    Eigen::VectorXd perToken;
    // text tokens x 4: min, mean, max, std of each text token's distances to all visual tokens
    // (the distance profile), from the same pass.
    Eigen::MatrixX4d profiles;
};
// Throws InvalidInput above kMaxPtdPairs text x visual distances (about 10 s on two cores).
PtdResult computePtd(const PositionTable& table);
constexpr long long kMaxPtdPairs = 1LL << 32;

// Distances from one text token to every visual token.
struct DistanceProfile {
    double min = 0, mean = 0, max = 0, stddev = 0;
};
DistanceProfile distanceProfile(const PositionTable& table, int textToken);

// Positional prior b(t, i) = sum_j 2 cos(theta_j * (p_t - p_i)[c(j)]): the rotary logit for q = k = ones,
// the content-independent part of attention, for one text token against every visual token.
struct PriorMap {
    int textToken = -1;
    Eigen::VectorXd values; // per visual token, blocks in table order, row-major inside a block
    double min = 0, max = 0, spread = 0, stddev = 0;
};
PriorMap positionalPrior(const PositionTable& table, int textToken);

// Crowding among the visual tokens of each visual segment (all frames of a video together):
// tokens that coincide with an earlier one (distance < eps), and the closest pair.
struct Crowding {
    long long collisions = 0;
    double minPairDistance = 0; // infinity when no segment has two tokens
    int tokenA = -1, tokenB = -1;
};
Crowding visualCrowding(const PositionTable& table, double eps = 1e-6);

} // namespace ropescope::geometry

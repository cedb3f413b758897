#pragma once
#include "core/geometry/scheme.h"

#include <Eigen/Core>

namespace ropescope::geometry {

// Circular Image Token Index Projection (Circle-RoPE sec. 4.1), following the official code
// (github lose4578/CircleRoPE): centre the grid, mix the spatial-origin angle (SA) and the grid-index
// angle (GA), put the tokens on a circle of radius R in the plane orthogonal to the text vector.

// The text axis as a unit vector; any finite non-zero vector, however large, gives its direction.
Eigen::Vector3d unitTextAxis(const Eigen::Vector3d& textVectorWht);

struct PlaneBasis {
    Eigen::Vector3d u; // (w, h, t) order
    Eigen::Vector3d v;
};

// u = (-n_h, n_w, 0)/|.|, v = n x u; for a text vector along t the official code uses u = (1,0,0),
// v = (0,1,0) (the paper's pseudocode would give v = n x u, which flips v for n = -t).
PlaneBasis planeBasis(const Eigen::Vector3d& textVectorWht);

// The radius R for an H x W grid under the params' radius mode.
double circleRadius(const CircleParams& params, int rows, int cols);

// Mixed angle theta = alpha * SA + (1 - alpha) * GA per token, row-major.
Eigen::VectorXd mixedAngles(int rows, int cols, double alpha);

// Offsets from the ring centre (c, c, c) per token, row-major; columns are (t, h, w).
Eigen::MatrixX3d circleOffsets(int rows, int cols, const CircleParams& params);

} // namespace ropescope::geometry

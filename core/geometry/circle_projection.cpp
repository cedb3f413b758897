#include "core/geometry/circle_projection.h"

#include <Eigen/Geometry>

#include <cmath>

namespace ropescope::geometry {
namespace {
constexpr double kTwoPi = 6.283185307179586476925286766559;
}

Eigen::Vector3d unitTextAxis(const Eigen::Vector3d& textVectorWht)
{
    // Scaled first: the norm of (1e308, 1e308, 1e308) overflows to infinity.
    return (textVectorWht / textVectorWht.cwiseAbs().maxCoeff()).normalized();
}

PlaneBasis planeBasis(const Eigen::Vector3d& textVectorWht)
{
    const Eigen::Vector3d n = unitTextAxis(textVectorWht);
    if (std::abs(n.x()) < 1e-6 && std::abs(n.y()) < 1e-6)
        return {Eigen::Vector3d(1, 0, 0), Eigen::Vector3d(0, 1, 0)};
    const Eigen::Vector3d u = Eigen::Vector3d(-n.y(), n.x(), 0.0).normalized();
    const Eigen::Vector3d v = n.cross(u).normalized();
    return {u, v};
}

double circleRadius(const CircleParams& params, int rows, int cols)
{
    const double halfW = (cols - 1) / 2.0;
    const double halfH = (rows - 1) / 2.0;
    switch (params.radiusMode) {
    case RadiusMode::Fixed: return params.radius;
    case RadiusMode::AutoPaper: return params.radius * std::hypot(halfW, halfH);
    case RadiusMode::AutoCode: return params.radius * std::max(halfW, halfH);
    }
    return params.radius;
}

Eigen::VectorXd mixedAngles(int rows, int cols, double alpha)
{
    const int n = rows * cols;
    const double cx = (cols - 1) / 2.0;
    const double cy = (rows - 1) / 2.0;
    Eigen::VectorXd raw(n);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            raw[r * cols + c] = std::atan2(r - cy, c - cx);
    const double lo = raw.minCoeff();
    const double range = raw.maxCoeff() - lo;

    Eigen::VectorXd theta(n);
    for (int k = 0; k < n; ++k) {
        // With range 0 (a single token) the official code keeps the raw angle, the paper uses 0; both are
        // atan2(0, 0) = 0 there.
        const double sa = range > 0 ? (raw[k] - lo) / range * kTwoPi : raw[k];
        const double ga = kTwoPi * k / n;
        theta[k] = alpha * sa + (1.0 - alpha) * ga;
    }
    return theta;
}

Eigen::MatrixX3d circleOffsets(int rows, int cols, const CircleParams& params)
{
    const PlaneBasis basis = planeBasis(params.textVector);
    const double radius = circleRadius(params, rows, cols);
    const Eigen::VectorXd theta = mixedAngles(rows, cols, params.alpha);
    Eigen::MatrixX3d out(theta.size(), 3);
    for (Eigen::Index k = 0; k < theta.size(); ++k) {
        const double x = radius * std::cos(theta[k]);
        const double y = radius * std::sin(theta[k]);
        const Eigen::Vector3d wht = x * basis.u + y * basis.v;
        out(k, 0) = wht.z(); // t
        out(k, 1) = wht.y(); // h
        out(k, 2) = wht.x(); // w
    }
    return out;
}

} // namespace ropescope::geometry

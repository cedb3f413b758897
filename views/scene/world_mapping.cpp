#include "views/scene/world_mapping.h"

#include <algorithm>
#include <cmath>

namespace ropescope::views {

Eigen::MatrixX3d worldCoordinates(const geometry::PositionTable& table, const SceneOptions& options)
{
    const Eigen::MatrixXd& p = table.positions;
    Eigen::MatrixX3d world(p.rows(), 3);
    switch (table.components()) {
    case 1: world.col(0) = world.col(1) = world.col(2) = p.col(0); break;
    case 3:
        world.col(0) = p.col(2);
        world.col(1) = p.col(1);
        world.col(2) = p.col(0);
        break;
    case 4:
        if (options.projection.kind == Projection4D::Components) {
            for (int i = 0; i < 3; ++i)
                world.col(i) = p.col(std::clamp(options.projection.components[static_cast<size_t>(i)], 0, 3));
        } else {
            // s = mean of the four components runs along (1,1,1); the Hadamard rows (1,-1,1,-1)/2 and
            // (1,1,-1,-1)/2 give the frame's w and h offsets, laid on two unit vectors across the axis.
            const Eigen::Vector3d e1 = Eigen::Vector3d(1, -1, 0).normalized();
            const Eigen::Vector3d e2 = Eigen::Vector3d(1, 1, -2).normalized();
            for (Eigen::Index i = 0; i < p.rows(); ++i) {
                const double s = p.row(i).mean();
                const double a = (p(i, 0) - p(i, 1) + p(i, 2) - p(i, 3)) / 2;
                const double b = (p(i, 0) + p(i, 1) - p(i, 2) - p(i, 3)) / 2;
                world.row(i) = (Eigen::Vector3d::Constant(s) + a * e1 + b * e2).transpose();
            }
        }
        break;
    default:
        world.setZero();
        for (int c = 0; c < std::min(3, table.components()); ++c)
            world.col(c) = p.col(c);
    }
    return world;
}

} // namespace ropescope::views

#pragma once
#include "core/geometry/position_table.h"
#include "views/scene/scene_options.h"

#include <Eigen/Core>

namespace ropescope::views {

// Where each token is drawn. World axes are (x, y, z) = (w, h, t), the official Circle-RoPE order, so
// the text axis is the world diagonal (1,1,1). 1-D schemes put index p at (p,p,p); 4-D tables use the
// options' projection. Rows follow the table's tokens.
Eigen::MatrixX3d worldCoordinates(const geometry::PositionTable& table, const SceneOptions& options);

} // namespace ropescope::views

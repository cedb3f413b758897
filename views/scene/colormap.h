#pragma once
#include <array>
#include <cstdint>

namespace ropescope::views {

using Rgb = std::array<std::uint8_t, 3>;

// Perceptually uniform viridis, t in [0, 1] (clamped).
Rgb viridis(double t);
// A 2-D colour code for grid cells: hue runs with the column, lightness with the row, so both the
// grid order and its corners stay recognisable once tokens move onto a ring.
Rgb rowColColour(int row, int rows, int col, int cols);

} // namespace ropescope::views

#pragma once
#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"

namespace ropescope::geometry {

// XD-RoPE (HunyuanOCR / HunyuanVL), positions in its code's order (p, w, h, t): the token table with its
// metadata, since with the newline column an image takes more tokens than the layout names (docs/SCHEMES.md).
// Split: every video frame is its own span (begin, grid, end), as HunyuanVL's video path places frames.
PositionTable xdRopeTable(const Layout& layout, bool newlineColumn, bool splitFrames);

} // namespace ropescope::geometry

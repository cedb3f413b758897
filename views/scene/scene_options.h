#pragma once
#include "core/session/view_options.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ropescope::views {

// The view options a session stores are defined with it (core/session/view_options.h).
using session::CameraPreset;
using session::ColourMode;
using session::Projection;
using session::Projection4D;

struct SceneOptions {
    ColourMode colour = ColourMode::RowCol;
    int selectedToken = -1;       // a text token: its cone lines, profile and prior map
    std::vector<int> highlighted; // tokens drawn larger in the highlight colour (indices outside the table are ignored)
    bool showConeLines = true;
    bool showConeSurface = false;
    bool showLabels = false; // index labels on text tokens
    bool darkBackground = false;
    Projection projection;
    // ImagePatch mode: RGB per visual token in table order (the loaded image resized to each grid).
    std::vector<std::array<std::uint8_t, 3>> patchColours;
};

} // namespace ropescope::views

#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace ropescope::views {

// How visual tokens are coloured in the cone view.
enum class ColourMode { RowCol, ImagePatch, DistanceToSelected };

// How a 4-component (VRoPE) table is shown in 3-D: three chosen components, or the Hadamard projection
// that puts the text axis (1,1,1,1) on the view's (1,1,1) and the frame's h/w offsets across it.
enum class Projection4D { Hadamard, Components };

enum class CameraPreset { Isometric, DownTextAxis, Side };

struct SceneOptions {
    ColourMode colour = ColourMode::RowCol;
    int selectedToken = -1;  // a text token: its cone lines, profile and prior map
    bool showConeLines = true;
    bool showConeSurface = false;
    bool showLabels = false; // index labels on text tokens
    bool darkBackground = false;
    Projection4D projection = Projection4D::Hadamard;
    std::array<int, 3> components{0, 1, 2};
    // ImagePatch mode: RGB per visual token in table order (the loaded image resized to each grid).
    std::vector<std::array<std::uint8_t, 3>> patchColours;
};

} // namespace ropescope::views

#pragma once
#include <array>
#include <optional>
#include <string>

namespace ropescope::session {

// How visual tokens are coloured in the cone view.
enum class ColourMode { RowCol, ImagePatch, DistanceToSelected };

enum class CameraPreset { Isometric, DownTextAxis, Side };

// How a 4-component (VRoPE) table is shown in 3-D: three chosen components, or the Hadamard projection
// that puts the text axis (1,1,1,1) on the view's (1,1,1) and the frame's h/w offsets across it.
enum class Projection4D { Hadamard, Components };

struct Projection {
    Projection4D kind = Projection4D::Hadamard;
    std::array<int, 3> components{0, 1, 2}; // each 0-3; used by Components

    bool operator==(const Projection& o) const { return kind == o.kind && (kind == Projection4D::Hadamard || components == o.components); }
};

// Camera as the user left it; absent until the first interaction, then restored with the session.
struct CameraState {
    std::array<double, 3> position{}, focalPoint{}, viewUp{};
    double viewAngle = 30.0;
};

// The one spelling of each option in session files, batch items, figure metadata and CLI flags:
// rowcol | patch | distance, isometric | axis | side, hadamard | "a,b,c". Parsers return nullopt on anything else.
const char* colourModeName(ColourMode mode);
std::optional<ColourMode> colourModeFromName(const std::string& name);
const char* cameraPresetName(CameraPreset preset);
std::optional<CameraPreset> cameraPresetFromName(const std::string& name);
std::string projectionName(const Projection& projection);
std::optional<Projection> projectionFromName(const std::string& name);

} // namespace ropescope::session

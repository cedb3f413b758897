#include "core/session/view_options.h"

namespace ropescope::session {

namespace {

const char* const kColourNames[] = {"rowcol", "patch", "distance"};
const char* const kCameraNames[] = {"isometric", "axis", "side"};

template <class Enum, size_t N> std::optional<Enum> fromName(const char* const (&names)[N], const std::string& name)
{
    for (size_t i = 0; i < N; ++i)
        if (name == names[i])
            return static_cast<Enum>(i);
    return std::nullopt;
}

} // namespace

const char* colourModeName(ColourMode mode)
{
    return kColourNames[static_cast<int>(mode)];
}

std::optional<ColourMode> colourModeFromName(const std::string& name)
{
    return fromName<ColourMode>(kColourNames, name);
}

const char* cameraPresetName(CameraPreset preset)
{
    return kCameraNames[static_cast<int>(preset)];
}

std::optional<CameraPreset> cameraPresetFromName(const std::string& name)
{
    return fromName<CameraPreset>(kCameraNames, name);
}

std::string projectionName(const Projection& projection)
{
    if (projection.kind == Projection4D::Hadamard)
        return "hadamard";
    const auto& c = projection.components;
    return std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]);
}

std::optional<Projection> projectionFromName(const std::string& name)
{
    if (name == "hadamard")
        return Projection{};
    // Exactly "a,b,c" with single digits 0-3 (the four VRoPE components).
    if (name.size() != 5 || name[1] != ',' || name[3] != ',')
        return std::nullopt;
    Projection p;
    p.kind = Projection4D::Components;
    for (size_t i = 0; i < 3; ++i) {
        const char d = name[2 * i];
        if (d < '0' || d > '3')
            return std::nullopt;
        p.components[i] = d - '0';
    }
    return p;
}

} // namespace ropescope::session

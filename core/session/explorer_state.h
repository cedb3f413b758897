#pragma once
#include "core/geometry/age.h"
#include "core/geometry/scheme.h"
#include "core/session/view_options.h"

#include <QJsonObject>
#include <QString>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::session {

// Everything the explorer shows: the geometry request, the view options and the camera. This is what a
// session file (.ropescope.json) stores and what a batch item describes.
struct ExplorerState {
    std::string layout = "text:4,image:8x8,text:6";
    geometry::SchemeParams params = defaultParams();
    std::string age; // empty: no AGE schedule
    int ageLayers = geometry::kDefaultAgeLayers;
    int layer = 0;

    // View
    int selectedToken = 3;        // the text token before the image in the default layout
    std::vector<int> highlighted; // tokens drawn marked, e.g. those attending an image region (Attention tab)
    ColourMode colourMode = ColourMode::RowCol;
    bool showConeLines = true;
    bool showConeSurface = false;
    bool showLabels = true;
    bool darkBackground = false;
    Projection projection;
    CameraPreset camera = CameraPreset::Isometric;
    std::optional<CameraState> cameraState;
    QString imagePath; // image whose patch colours colour the visual tokens

    static geometry::SchemeParams defaultParams(); // Circle-RoPE, alpha 0.5, R 10

    // The parameters of the table shown (AGE picks the scheme or mrope for `layer`).
    geometry::SchemeParams effectiveParams() const;
    std::optional<geometry::AgeSchedule> ageSchedule() const;
    // Throws geometry::InvalidInput naming the parameter if the state cannot be drawn.
    geometry::PositionTable buildTable() const;

    QJsonObject toJson() const;
    // Reads a session object; unknown keys are ignored, missing keys keep defaults. Throws
    // geometry::InvalidInput naming the first bad key, so a corrupt file never yields half a state.
    static ExplorerState fromJson(const QJsonObject& json);
};

} // namespace ropescope::session

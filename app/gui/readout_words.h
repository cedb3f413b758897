#pragma once
// The explorer's readouts in words, as the window's labels show them.
#include "core/session/readouts.h"

#include <QString>

#include <string>

namespace ropescope::gui {

// "CMCMCM CMCMCM ...": an AGE pattern in groups of six that a label can wrap, the first 36 layers at most.
QString groupedPattern(const std::string& pattern);
// The radius the auto modes gave each grid ("R = 3.2..5.1"); empty for a fixed radius.
QString effectiveRadius(const session::Readouts& readouts, const geometry::SchemeParams& params);
// The shown scheme's PTD, per block, and the crowding of the visual tokens.
QString ptdReadout(const session::Readouts& readouts);
// The selected text token's distances to the visual tokens and its prior map's spread.
QString selectionReadout(const session::Readouts& readouts);

} // namespace ropescope::gui

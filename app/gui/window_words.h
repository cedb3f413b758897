#pragma once
#include "core/geometry/errors.h"

#include <QString>

#include <string>

namespace ropescope::gui {

// A core error in the window's words: the parameter it names becomes the control's label ("sections" ->
// "Sections:", "temporal_stride" -> "Frame spacing delta:"), as the CLI turns it into the flag.
QString inWindowWords(const std::string& parameter, const std::string& reason);
// A setting's name (a session key such as "selected_token") as the window says it ("selected token").
QString settingWord(const QString& key);
QString inWindowWords(const geometry::InvalidInput& e);

} // namespace ropescope::gui

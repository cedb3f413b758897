#pragma once
// A built-in scheme as a Python scheme file: a self-contained, numpy-only module in the format Python schemes
// take (positions, PARAMETERS, COMPONENTS, allocation), with a get_rope_index-style adapter for training code.
// `ropescope export-scheme` writes it; a researcher edits it, watches it live, and pastes it into training.
#include "core/geometry/scheme.h"

#include <QByteArray>
#include <string>

namespace ropescope::user_schemes {

// The module for `params` (a built-in: throws geometry::InvalidInput for a custom scheme). `provenance` is
// quoted in the docstring (the command line that made it). What the format cannot carry is named there:
// MHRoPE's per-head split and VideoRoPE++'s NTK-scaled time base are rotary settings, not positions.
QByteArray exportSchemeModule(const geometry::SchemeParams& params, const std::string& provenance);

} // namespace ropescope::user_schemes

#pragma once
#include "app/cli/geometry_options.h"

#include "core/geometry/position_table.h"

#include <QByteArray>
#include <QJsonObject>
#include <QSize>
#include <QString>

namespace ropescope::cli {

// `ropescope freqs` and batch "freqs" items: how the layout's scheme spends its rotary frequencies, as
// CSV (one row a frequency pair), JSON (pairs, spans, prior decay per axis) or a figure (PNG/SVG/PDF),
// chosen by `format` ("csv" or "json") or else by the output's extension. Throws UsageError for other extensions.
QByteArray frequencyReport(const GeometryRequest& req, const QString& output, QSize figureSize, const QString& kind = {});

// Whether a table's rotary is worth a section of its own in `ptd`: part of the head rotates, its frequencies are
// proportional or linearly scaled (Gemma's full layers), or a model's config gave it (--model).
bool rotaryWorthShowing(const geometry::RotaryConfig& rotary);
// Which dims rotate at which frequencies: theta, head_dim, rotary_dim, the forms, and every pair of the head (axis,
// inv_freq, dims; a proportional rotary's unturned pairs as axis "none", inv_freq 0).
QJsonObject rotaryJson(const geometry::PositionTable& table);
// The same in a few lines of text: "rotary: theta 1e+06, head_dim 512, dims 0-63 and 256-319 rotate ...".
QByteArray rotaryText(const geometry::PositionTable& table);

} // namespace ropescope::cli

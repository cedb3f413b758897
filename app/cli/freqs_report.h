#pragma once
#include "app/cli/geometry_options.h"

#include <QByteArray>
#include <QSize>
#include <QString>

namespace ropescope::cli {

// `ropescope freqs` and batch "freqs" items: how the layout's scheme spends its rotary frequencies, as
// CSV (one row a frequency pair), JSON (pairs, spans, prior decay per axis) or a figure (PNG/SVG/PDF),
// chosen by `format` ("csv" or "json") or else by the output's extension. Throws UsageError for other extensions.
QByteArray frequencyReport(const GeometryRequest& req, const QString& output, QSize figureSize, const QString& kind = {});

} // namespace ropescope::cli

#pragma once
#include "app/cli/geometry_options.h"
#include "core/geometry/position_table.h"

#include <QJsonObject>

namespace ropescope::cli {

// PTD per block and overall, crowding, and optionally each text token's deviation and distance profile,
// as `ptd --json` prints it. Throws UsageError if the table lacks text or visual tokens.
QJsonObject ptdReport(const GeometryRequest& req, const geometry::PositionTable& table, bool perToken);

} // namespace ropescope::cli

#pragma once
#include "core/session/readouts.h"
#include "views/charts/charts.h"

namespace ropescope::views {

// The explorer's three readout charts, from one set of readouts.
BarChart ptdChart(const session::Readouts& readouts);
ProfileChart profileChart(const session::Readouts& readouts);
HeatmapChart priorChart(const session::Readouts& readouts);
// The frequency-allocation view of a position table (any table: the explorer's, a CLI layout's).
FrequencyChart frequencyChart(const geometry::PositionTable& table);

} // namespace ropescope::views

#pragma once
#include "charts.h"
#include "session/readouts.h"

namespace ropescope::views {

// The explorer's three readout charts, from one set of readouts.
BarChart ptdChart(const session::Readouts& readouts);
ProfileChart profileChart(const session::Readouts& readouts);
HeatmapChart priorChart(const session::Readouts& readouts);

} // namespace ropescope::views

#pragma once
#include <QCommandLineParser>

namespace ropescope::cli {

// `ropescope bench attention`: the Attention tab's views on a model (default the bundled mrope model and
// sample): the run, one token's map, the layers x heads grid, the per-token sheet, schemes side by side.
int benchAttention(const QCommandLineParser& parser);

} // namespace ropescope::cli

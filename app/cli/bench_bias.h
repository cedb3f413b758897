#pragma once
#include <QCommandLineParser>

namespace ropescope::cli {

// `ropescope bench bias`: a bias measurement on a bundled model (default mrope): 200 synthetic samples under
// its own scheme, vrope and circle, every layer; the time and the process' peak memory. Goal: under 20 s.
int benchBias(const QCommandLineParser& parser);

} // namespace ropescope::cli

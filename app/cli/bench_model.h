#pragma once
#include <QCommandLineParser>

namespace ropescope::cli {

// `ropescope bench model`: load, vision encode, decoder prefill, capture overhead and peak memory.
void addBenchModelOptions(QCommandLineParser& parser);
int benchModel(const QCommandLineParser& parser);

} // namespace ropescope::cli

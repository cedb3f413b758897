#pragma once
// The flags of `ropescope bias` and of batch `bias` items, and the measurement they ask for (command_bias.cpp).
#include "app/reports/bias_report.h"
#include "core/model/analysis/bias_samples.h"

#include <QCommandLineParser>

#include <functional>
#include <utility>
#include <vector>

namespace ropescope::cli {

struct ModelOnDevice;

struct BiasSetup {
    model::BiasSampleSource source;
    std::vector<int64_t> indices; // this run's (or shard's) samples
};
// The flags of `bias` and of batch `bias` items (all but --output and --merge).
void addBiasOptions(QCommandLineParser& parser);
// Checks the flags that need no model; throws UsageError naming the bad one.
BiasSetup parseBiasOptions(const QCommandLineParser& parser);
// Measures with a loaded model: its own scheme, then --schemes entries that differ from it.
model::BiasAccumulation measureBiasFromFlags(const QCommandLineParser& parser, const BiasSetup& setup, ModelOnDevice& model,
                                             const std::function<void(int64_t, int64_t)>& progress = {},
                                             const std::function<bool()>& cancelled = {});

} // namespace ropescope::cli

#pragma once
#include "core/model/engine/model_config.h"

#include <string>

namespace ropescope::model {

// The parameters a config's weights hold, counted from its shapes (the decoder's embeddings, attention or
// DeltaNet mixers, dense or expert MLPs, the vision tower and its merger). A lower bound: norms, biases and
// the smaller side tensors are left out, so a model that fits is never refused for what this omits.
double weightParameters(const ModelConfig& config);

// The memory this process may use: physical memory, or the address-space or data limit (ulimit -v / -d) when
// lower. 0 when unknown.
double usableMemoryBytes();

// Refuses, before any weight is allocated, a config whose weights at `bytesPerParameter` do not fit in this
// machine's memory: "config.json: 824.0 GB of weights at fp32; this machine has 23.0 GB". `what` names the
// config (its file, or the model folder).
void refuseWeightsOverMemory(const ModelConfig& config, int bytesPerParameter, const std::string& what);

} // namespace ropescope::model

#pragma once
// bench model --gemm-floor: the decoder's prefill against its projections alone.
#include "core/model/engine/model_config.h"

#include <QJsonObject>

#include <c10/core/TensorOptions.h>

#include <functional>

namespace ropescope::cli {

// The decoder's projections at the prompt's length, each timed as one GEMM on random operands of its layer's shape
// (attention's q, k, v and o, a Gated DeltaNet layer's five projections, the dense MLP's gate, up and down), and
// summed over the layers: what a prefill would take if it were only its GEMMs, at the speed this machine's GEMM
// reaches at those shapes right now. Rounds alternate one prefill (`decoderPassMs`, the decoder's own time) with
// one floor; the ratio is the median of each round's own, so drift in the machine's speed stays out of it.
// The FLOP limit adds the least work of attention and the delta rule at the rate the projections reached: issue
// 57's CPU goal is Qwen3.5-0.8B's prefill within 1.5x of it. Sparse (MoE) layers' MLPs are left out and said so:
// bench model times their block apart. `sync` waits for the device.
QJsonObject benchGemmFloor(const model::TextConfig& text, int64_t tokens, int runs, const c10::TensorOptions& options,
                           const std::function<double()>& decoderPassMs, const std::function<void()>& sync);

} // namespace ropescope::cli

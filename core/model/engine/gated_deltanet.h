#pragma once
// Qwen3.5's linear-attention token mixer, the Gated DeltaNet (Yang et al. 2024, "Gated Delta Networks"):
// no positions at all, a state per value head that each token decays and corrects. Plain LibTorch.
#include "core/model/engine/model_config.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

namespace ropescope::model {

// One layer's weights, under model.layers.{i}.linear_attn. as the Hub names them.
struct DeltaNetWeights {
    at::Tensor qkvW;   // in_proj_qkv [2 Hk dk + Hv dv, hidden]: [q | k | v], heads contiguous
    at::Tensor zW;     // in_proj_z [Hv dv, hidden]: the output gate
    at::Tensor bW;     // in_proj_b [Hv, hidden]: beta = sigmoid(b)
    at::Tensor aW;     // in_proj_a [Hv, hidden]: the decay's input
    at::Tensor convW;  // conv1d [C, 1, K], depthwise, no bias
    at::Tensor aLog;   // A_log [Hv]
    at::Tensor dtBias; // dt_bias [Hv]
    at::Tensor normW;  // norm [dv]: the gated RMSNorm's plain weight
    at::Tensor outW;   // out_proj [hidden, Hv dv]
};

// What decoding carries from token to token: the last K pre-conv columns [B, C, K] and the delta rule's
// state S [B, Hv, dk, dv]. Undefined tensors: the start of a sequence (zeros).
struct DeltaNetState {
    at::Tensor conv, recurrent;
};

// The pass's intermediates, as the reference fixtures hold them: g and beta [B, L, Hv], the delta rule's
// output before the gated norm [B, L, Hv, dv].
struct DeltaNetTrace {
    at::Tensor g, beta, core;
};

// The gated delta rule per value head, S <- exp(g_t) S;  S <- S + k_t (beta_t (v_t - S^T k_t))^T;  o_t = S^T q_t,
// evaluated in chunks of `chunk` tokens (within a chunk in closed form, a triangular solve; across chunks
// through S), so a prompt's memory grows with L, not L^2. q, k [B, H, L, dk] (already normalised and
// scaled), v [B, H, L, dv], g and beta [B, H, L]; `state` [B, H, dk, dv] in (undefined: zeros) and out.
at::Tensor gatedDeltaRule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g, const at::Tensor& beta,
                          at::Tensor& state, int64_t chunk = 64);

// The whole mixer on norm1(x) [B, L, hidden] -> [B, L, hidden], continuing `state` when given (decoding)
// and leaving the end-of-pass state in it.
at::Tensor gatedDeltaNet(const at::Tensor& x, const DeltaNetWeights& w, const TextConfig& cfg, DeltaNetState* state,
                         DeltaNetTrace* trace = nullptr);

} // namespace ropescope::model

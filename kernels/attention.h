#pragma once
#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <optional>

namespace ropescope::kernels {

// Which attention probabilities to keep: rows (query tokens) x columns (key tokens) of every head.
// Empty index tensors mean "all". Keeping all rows and all columns is the full L x L map, only on request.
struct CaptureSelection {
    at::Tensor rows; // int64 query indices (relative to this call's queries)
    at::Tensor cols; // int64 key indices
    // Optional, for callers that attend many times with the same rows (a decoder's layers): the rows'
    // additive causal mask over all keys, from causalRowsMask. Used only with causal masking.
    at::Tensor rowsMask;
};

// Additive mask [rows, keys] in `dtype`: 0 where query row r (counted after `past` earlier keys) may see
// key j (j <= past + r), -inf elsewhere.
at::Tensor causalRowsMask(const at::Tensor& rows, int64_t past, int64_t keys, c10::ScalarType dtype);

// Which keys each query sees: all of them, or (causal) query i sees keys <= past + i, where `past` keys
// came before this call's queries (a KV cache).
struct Masking {
    bool causal = false;
    int64_t past = 0;
    // Optional, for callers that attend many times with the same queries (a decoder's layers): the
    // additive [Lq, Lk] mask from causalRowsMask, which the explicit path would otherwise make each call.
    at::Tensor additive;
    // Optional, instead of causal: which keys the queries may see, bool [1 or Lq, Lk]. Decoding into a KV cache
    // of fixed capacity (the shapes a CUDA graph replays) hides the slots not yet written.
    at::Tensor visible;
};

// How the context is computed. Fused: scaled_dot_product_attention (flash / memory-efficient kernels on
// CUDA, the fused CPU kernel), which never holds the Lq x Lk scores; only LibTorch >= 2.1 has it.
// Explicit: scores, softmax and the product written out (LibTorch 1.13's only path).
enum class AttentionPath { Fused, Explicit };
bool fusedAttentionAvailable();
// The process-wide choice; Fused where available unless ROPESCOPE_ATTENTION=explicit. For benchmarks
// and parity tests that compare the two; asking for Fused where it is unavailable keeps Explicit.
AttentionPath attentionPath();
void setAttentionPath(AttentionPath path);

// Scaled dot-product attention with probability capture. q [H, Lq, d]; k, v [Hkv, Lk, d] with H a multiple
// of Hkv (grouped-query attention; a batch is folded into the head dimension, batch-major). Softmax runs in
// float32. Returns the context per head [H, Lq, d]; with `capture`, also the selected probabilities
// [H, rows, cols]. On the fused path only the captured rows' scores are formed (against all keys, as the
// softmax needs), so memory grows with rows x Lk rather than Lq x Lk.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Masking masking,
                     const CaptureSelection* capture = nullptr, at::Tensor* captured = nullptr);

} // namespace ropescope::kernels

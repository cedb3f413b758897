#pragma once
#include <torch/torch.h>

#include <optional>

namespace ropescope::kernels {

// Which attention probabilities to keep: rows (query tokens) x columns (key tokens) of every head.
// Empty index tensors mean "all". Keeping all rows and all columns is the full L x L map, only on request.
struct CaptureSelection {
    torch::Tensor rows; // int64 query indices (relative to this call's queries)
    torch::Tensor cols; // int64 key indices
};

// Scaled dot-product attention, written out because the probabilities are part of the product
// (LibTorch 1.13 has no fused kernel anyway). q [H, Lq, d]; k, v [Hkv, Lk, d] with H a multiple of Hkv
// (grouped-query attention; a batch is folded into the head dimension, batch-major). `mask` is additive
// [Lq, Lk] (0 or -inf) or undefined. Softmax runs in float32. Returns the context per head [H, Lq, d];
// with `capture`, also the selected probabilities [H, rows, cols].
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& mask,
                        const CaptureSelection* capture = nullptr, torch::Tensor* captured = nullptr);

// Additive causal mask for Lq queries that follow `past` cached keys: query i sees keys <= past + i.
torch::Tensor causalMask(int64_t queries, int64_t past, const torch::TensorOptions& options);

} // namespace ropescope::kernels

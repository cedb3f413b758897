#include "attention.h"

#include <cmath>
#include <limits>

namespace ropescope::kernels {

torch::Tensor causalMask(int64_t queries, int64_t past, const torch::TensorOptions& options)
{
    const auto keys = past + queries;
    const auto q = torch::arange(queries, options.dtype(torch::kInt64)).unsqueeze(1) + past;
    const auto k = torch::arange(keys, options.dtype(torch::kInt64)).unsqueeze(0);
    return torch::zeros({queries, keys}, options.dtype(torch::kFloat32))
        .masked_fill(k > q, -std::numeric_limits<float>::infinity());
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& mask,
                        const CaptureSelection* capture, torch::Tensor* captured)
{
    const int64_t heads = q.size(0), groups = heads / k.size(0), dim = q.size(2);
    const auto keys = groups > 1 ? k.repeat_interleave(groups, 0) : k;
    const auto values = groups > 1 ? v.repeat_interleave(groups, 0) : v;
    auto scores = torch::matmul(q, keys.transpose(1, 2)) / std::sqrt(static_cast<double>(dim));
    if (mask.defined())
        scores = scores + mask;
    const auto probs = torch::softmax(scores.to(torch::kFloat32), -1).to(q.scalar_type());
    if (capture && captured) {
        torch::Tensor kept = probs;
        if (capture->rows.defined() && capture->rows.numel() > 0)
            kept = kept.index_select(1, capture->rows);
        if (capture->cols.defined() && capture->cols.numel() > 0)
            kept = kept.index_select(2, capture->cols);
        *captured = kept.contiguous();
    }
    return torch::matmul(probs, values).transpose(0, 1).reshape({q.size(1), heads * dim});
}

} // namespace ropescope::kernels

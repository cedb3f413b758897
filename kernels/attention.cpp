#include "attention.h"

#include <algorithm>
#include <cmath>
#include <vector>
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
    // Without capture, queries are processed in chunks so the H x Lq x Lk scores stay under ~128 MB
    // (a 4000-patch image in a 16-head vision block would otherwise need 1 GB per block).
    constexpr int64_t kMaxScores = int64_t(1) << 25;
    const int64_t perRow = q.size(0) * k.size(1);
    if (!capture && q.size(1) * perRow > kMaxScores) {
        const int64_t chunk = std::max<int64_t>(1, kMaxScores / perRow);
        std::vector<torch::Tensor> parts;
        for (int64_t start = 0; start < q.size(1); start += chunk) {
            const int64_t len = std::min(chunk, q.size(1) - start);
            parts.push_back(attention(q.narrow(1, start, len), k, v, mask.defined() ? mask.narrow(0, start, len) : mask));
        }
        return torch::cat(parts, 1);
    }
    const int64_t heads = q.size(0), groups = heads / k.size(0), dim = q.size(2);
    // Contiguous operands keep batched matmul on the BLAS path (strided views fall back to a slow loop).
    const auto keys = (groups > 1 ? k.repeat_interleave(groups, 0) : k).contiguous();
    const auto values = (groups > 1 ? v.repeat_interleave(groups, 0) : v).contiguous();
    // Scale and mask fused into the matmul: no extra passes over the L x L scores.
    const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
    const auto scores = mask.defined()
                            ? torch::baddbmm(mask.to(q.scalar_type()).expand({heads, q.size(1), keys.size(1)}), q.contiguous(),
                                             keys.transpose(1, 2), 1.0, scale)
                            : torch::matmul(q.contiguous() * scale, keys.transpose(1, 2));
    const auto probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
    if (capture && captured) {
        torch::Tensor kept = probs;
        if (capture->rows.defined() && capture->rows.numel() > 0)
            kept = kept.index_select(1, capture->rows);
        if (capture->cols.defined() && capture->cols.numel() > 0)
            kept = kept.index_select(2, capture->cols);
        *captured = kept.contiguous();
    }
    return torch::matmul(probs, values);
}

} // namespace ropescope::kernels

#include "kernels/attention.h"

#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

// scaled_dot_product_attention appeared in LibTorch 2.0 and got its fused CPU kernel in 2.1.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define ROPESCOPE_FUSED_ATTENTION 1
#endif

namespace ropescope::kernels {
namespace {

AttentionPath initialPath()
{
    const char* env = std::getenv("ROPESCOPE_ATTENTION");
    if (env && std::strcmp(env, "explicit") == 0)
        return AttentionPath::Explicit;
    return fusedAttentionAvailable() ? AttentionPath::Fused : AttentionPath::Explicit;
}

std::atomic<AttentionPath>& currentPath()
{
    static std::atomic<AttentionPath> path{initialPath()};
    return path;
}

// Query rows `rows` (absolute, counting the `past` keys before them) may see keys <= their own position.
torch::Tensor visibleKeys(const torch::Tensor& rows, int64_t past, int64_t keys)
{
    const auto k = torch::arange(keys, rows.options().dtype(torch::kInt64)).unsqueeze(0);
    return k <= (rows.to(torch::kInt64) + past).unsqueeze(1);
}

torch::Tensor additiveMask(const torch::Tensor& visible, torch::ScalarType dtype)
{
    return torch::zeros(visible.sizes(), visible.options().dtype(dtype))
        .masked_fill(visible.logical_not(), -std::numeric_limits<float>::infinity());
}

torch::Tensor repeatHeads(const torch::Tensor& t, int64_t groups)
{
    // Each head `groups` times in a row, as repeat_interleave(groups, 0) gives, but through a broadcast view:
    // repeat_interleave makes an index tensor from its count, which a CUDA graph cannot capture. Contiguous
    // operands keep batched matmul on the BLAS path (strided views fall back to a slow loop).
    if (groups == 1)
        return t.contiguous();
    auto sizes = t.sizes().vec();
    sizes.insert(sizes.begin() + 1, groups);
    auto merged = t.sizes().vec();
    merged[0] *= groups;
    return t.unsqueeze(1).expand(sizes).reshape(merged);
}

// Softmax probabilities of queries q [H, R, d] over all keys [H, Lk, d]. Scores in q's dtype, softmax in
// float32 and the result back in q's dtype: what Hugging Face's eager attention returns.
torch::Tensor probabilities(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& mask)
{
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    // Scale and mask fused into the matmul: no extra passes over the scores.
    const auto scores = mask.defined()
        ? torch::baddbmm(mask.expand({q.size(0), q.size(1), keys.size(1)}), q.contiguous(), keys.transpose(1, 2), 1.0, scale)
        : torch::matmul(q.contiguous() * scale, keys.transpose(1, 2));
    return torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
}

torch::Tensor selectColumns(const torch::Tensor& probs, const CaptureSelection& capture)
{
    const bool someCols = capture.cols.defined() && capture.cols.numel() > 0;
    return (someCols ? probs.index_select(2, capture.cols) : probs).contiguous();
}

// Whether a causal call hides any key: not when its one query is the last token.
bool hidesKeys(Masking masking, int64_t queries, int64_t keys)
{
    return masking.causal && !(queries == 1 && masking.past + 1 >= keys);
}

bool someRows(const CaptureSelection* capture)
{
    return capture && capture->rows.defined() && capture->rows.numel() > 0;
}

torch::Tensor explicitAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, Masking masking,
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
            const auto mask = masking.additive.defined() ? masking.additive.narrow(0, start, len) : torch::Tensor();
            const auto visible =
                masking.visible.defined() && masking.visible.size(0) > 1 ? masking.visible.narrow(0, start, len) : masking.visible;
            parts.push_back(
                explicitAttention(q.narrow(1, start, len), k, v, {masking.causal, masking.past + start, mask, visible}, nullptr, nullptr));
        }
        return torch::cat(parts, 1);
    }
    const int64_t groups = q.size(0) / k.size(0);
    const auto keys = repeatHeads(k, groups), values = repeatHeads(v, groups);
    torch::Tensor mask;
    if (masking.visible.defined())
        mask = additiveMask(masking.visible, q.scalar_type());
    else if (hidesKeys(masking, q.size(1), keys.size(1)))
        mask = masking.additive.defined()
            ? masking.additive
            : causalRowsMask(torch::arange(q.size(1), q.options().dtype(torch::kInt64)), masking.past, keys.size(1), q.scalar_type());
    const auto probs = probabilities(q, keys, mask);
    if (capture && captured)
        *captured = selectColumns(someRows(capture) ? probs.index_select(1, capture->rows) : probs, *capture);
    return torch::matmul(probs, values);
}

#ifdef ROPESCOPE_FUSED_ATTENTION
torch::Tensor fusedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, Masking masking,
                             const CaptureSelection* capture, torch::Tensor* captured)
{
    const int64_t queries = q.size(1), groups = q.size(0) / k.size(0);
    const auto keys = repeatHeads(k, groups), values = repeatHeads(v, groups);
    const int64_t keyCount = keys.size(1);
    // The flash and memory-efficient CUDA kernels take [batch, heads, L, d]; heads here are one batch.
    auto sdpa = [&](const torch::Tensor& boolMask, bool causal) {
        const auto q4 = q.unsqueeze(0), k4 = keys.unsqueeze(0), v4 = values.unsqueeze(0);
        return (boolMask.defined() ? at::scaled_dot_product_attention(q4, k4, v4, boolMask, 0.0, causal)
                                   : at::scaled_dot_product_attention(q4, k4, v4, {}, 0.0, causal))
            .squeeze(0);
    };
    const bool causal = hidesKeys(masking, queries, keyCount) && !masking.visible.defined();
    torch::Tensor context;
    if (masking.visible.defined())
        context = sdpa(masking.visible, false);
    else if (causal && masking.past == 0 && queries == keyCount)
        context = sdpa({}, true); // is_causal aligns the triangle top-left: right only without a past
    else if (causal)
        context = sdpa(visibleKeys(torch::arange(queries, q.options().dtype(torch::kInt64)), masking.past, keyCount), false);
    else
        context = sdpa({}, false);
    if (capture && captured) {
        // Only the captured rows' scores are formed: rows x Lk per head, never Lq x Lk (unless all rows are asked for).
        const auto rows = someRows(capture) ? capture->rows : torch::arange(queries, q.options().dtype(torch::kInt64));
        torch::Tensor mask;
        if (masking.visible.defined()) // a per-query mask keeps the captured rows' own
            mask = additiveMask(masking.visible.size(0) > 1 ? masking.visible.index_select(0, rows) : masking.visible, q.scalar_type());
        else if (causal)
            mask = capture->rowsMask.defined() && someRows(capture) ? capture->rowsMask
                                                                    : causalRowsMask(rows, masking.past, keyCount, q.scalar_type());
        *captured = selectColumns(probabilities(q.index_select(1, rows), keys, mask), *capture);
    }
    return context;
}
#endif

} // namespace

torch::Tensor causalRowsMask(const torch::Tensor& rows, int64_t past, int64_t keys, torch::ScalarType dtype)
{
    return additiveMask(visibleKeys(rows, past, keys), dtype);
}

bool fusedAttentionAvailable()
{
#ifdef ROPESCOPE_FUSED_ATTENTION
    return true;
#else
    return false;
#endif
}

AttentionPath attentionPath()
{
    return currentPath().load();
}

void setAttentionPath(AttentionPath path)
{
    currentPath().store(fusedAttentionAvailable() ? path : AttentionPath::Explicit);
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, Masking masking,
                        const CaptureSelection* capture, torch::Tensor* captured)
{
#ifdef ROPESCOPE_FUSED_ATTENTION
    if (attentionPath() == AttentionPath::Fused)
        return fusedAttention(q, k, v, masking, capture, captured);
#endif
    return explicitAttention(q, k, v, masking, capture, captured);
}

} // namespace ropescope::kernels

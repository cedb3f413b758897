#include "core/model/engine/attention_masks.h"

#include <torch/types.h>

namespace ropescope::model {
namespace {

// Whether a kind's image blocks attend both ways.
bool blocksOpen(const TextConfig& text, int kind)
{
    return text.imageBlocks == ImageBlocks::AllLayers || (text.imageBlocks == ImageBlocks::SlidingLayers && kind == 0);
}

// visible [n, past + n]: causal, or the query's own block, then within the window.
torch::Tensor visiblePrompt(int64_t past, int64_t n, int window, const torch::Tensor& blockIds, c10::Device device)
{
    const auto options = torch::TensorOptions().dtype(torch::kInt64).device(device);
    const auto q = torch::arange(past, past + n, options).unsqueeze(1), k = torch::arange(past + n, options).unsqueeze(0);
    auto visible = k <= q;
    if (blockIds.defined()) {
        const auto blocks = blockIds.to(device);
        const auto bq = blocks.narrow(0, past, n).unsqueeze(1), bk = blocks.unsqueeze(0);
        visible = visible.logical_or(bq.eq(bk).logical_and(bq.ge(0)));
    }
    return window > 0 ? visible.logical_and(k > q - window) : visible;
}

} // namespace

at::Tensor imageBlockIds(const std::vector<int64_t>& ids, int64_t imageToken, int64_t videoToken)
{
    std::vector<int64_t> blocks(ids.size(), -1);
    int64_t block = -1;
    for (size_t i = 0; i < ids.size(); ++i) {
        const bool vision = ids[i] == imageToken || (videoToken >= 0 && ids[i] == videoToken);
        if (!vision)
            continue;
        if (i == 0 || blocks[i - 1] < 0)
            ++block;
        blocks[i] = block;
    }
    return torch::tensor(blocks, torch::kInt64);
}

std::vector<kernels::Masking> kindMasking(const TextConfig& text, const kernels::Masking& causal, const torch::Tensor& blockIds,
                                          int64_t past, int64_t n, const KvCache* cache, c10::Device device)
{
    if (text.slidingLayers.empty())
        return {causal};
    std::vector<kernels::Masking> out;
    for (int kind = 0; kind < 2; ++kind) {
        const int window = kind == 0 ? text.slidingWindow : 0;
        const bool blocks = blocksOpen(text, kind) && blockIds.defined() && blockIds.size(0) >= past + n;
        if (window == 0 && !blocks) {
            out.push_back(causal);
        } else if (cache && cache->fixed()) { // one query at slot: the slots written, within the window
            out.push_back({false, 0, {}, causal.visible.logical_and((cache->slots > cache->slot - window).unsqueeze(0))});
        } else {
            out.push_back({false, 0, {}, visiblePrompt(past, n, window, blocks ? blockIds : torch::Tensor(), device)});
        }
    }
    return out;
}

at::Tensor visibleKeysOfLayer(const TextConfig& text, int layer, const torch::Tensor& blockIds, int64_t length)
{
    const int kind = text.kindIndex(layer);
    const int window = text.isSliding(layer) ? text.slidingWindow : 0;
    const bool blocks = blocksOpen(text, kind) && blockIds.defined() && blockIds.size(0) >= length;
    return visiblePrompt(0, length, window, blocks ? blockIds : torch::Tensor(), torch::kCPU);
}

} // namespace ropescope::model

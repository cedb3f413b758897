// GLM-V's parts of the vision tower (GLM-4.1V / GLM-4.6V): its tensors, the learned position table resampled
// bicubically to each image's or frame's patch grid, and the head after the blocks (post-layernorm, a 2x2
// Conv2d downsample, a gated merger). The blocks, the 2-D rotary and the per-frame attention are shared
// with the Qwen towers (vision_tower.cpp).
#include "core/model/engine/vision_tower.h"

#include "core/model/engine/dense.h"

#include <torch/types.h>

namespace ropescope::model {

std::vector<VisionTower::GlmTensor> VisionTower::glmTensors() const
{
    const int64_t w = cfg_.width, out = cfg_.outHidden, inner = cfg_.mergerHidden;
    return {
        {"visual.post_conv_layernorm.weight", &GlmHead::postConvNormW, {w}},
        {"visual.post_layernorm.weight", &GlmHead::postNormW, {w}},
        {"visual.downsample.weight", &GlmHead::downsampleW, {out, w, cfg_.mergeSize, cfg_.mergeSize}},
        {"visual.downsample.bias", &GlmHead::downsampleB, {out}},
        {"visual.merger.proj.weight", &GlmHead::projW, {out, out}},
        {"visual.merger.post_projection_norm.weight", &GlmHead::normW, {out}},
        {"visual.merger.post_projection_norm.bias", &GlmHead::normB, {out}},
        {"visual.merger.gate_proj.weight", &GlmHead::gateW, {inner, out}},
        {"visual.merger.up_proj.weight", &GlmHead::upW, {inner, out}},
        {"visual.merger.down_proj.weight", &GlmHead::downW, {out, inner}},
        {"visual.embeddings.position_embedding.weight", nullptr, {cfg_.positionEmbeddings, w}}, // the tower's positionTable_
    };
}

void VisionTower::loadGlm(const Checkpoint& ck, torch::Dtype dtype)
{
    for (const GlmTensor& g : glmTensors()) {
        auto t = ck.tensor(g.name, g.shape).to(device_, dtype);
        if (g.member)
            glmHead_.*g.member = t;
        else
            positionTable_ = t;
    }
}

torch::Tensor VisionTower::bicubicPositions(const torch::Tensor& coordinates, const std::vector<int64_t>& grids) const
{
    // The side x side table as an image [1, width, side, side], sampled at each patch's centre in its own
    // grid: x = ((w + 0.5) / W) * 2 - 1, y likewise, in float32 as transformers computes it.
    const int64_t side = cfg_.positionGridSide(), width = positionTable_.size(1);
    const auto table = positionTable_.to(torch::kFloat32).view({side, side, width}).permute({2, 0, 1}).unsqueeze(0);
    std::vector<torch::Tensor> heights, widths;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t patches = grids[i] * grids[i + 1] * grids[i + 2];
        heights.push_back(torch::full({patches}, static_cast<float>(grids[i + 1]), torch::kFloat32));
        widths.push_back(torch::full({patches}, static_cast<float>(grids[i + 2]), torch::kFloat32));
    }
    const auto f = coordinates.to(torch::kFloat32);
    const auto y = (f.select(1, 0) + 0.5) / torch::cat(heights).to(device_) * 2 - 1;
    const auto x = (f.select(1, 1) + 0.5) / torch::cat(widths).to(device_) * 2 - 1;
    const auto grid = torch::stack({x, y}, -1).unsqueeze(0).unsqueeze(2); // [1, N, 1, 2], (x, y) as grid_sample reads it
    constexpr int64_t kBicubic = 2, kBorder = 1;                          // ATen's GridSamplerInterpolation / Padding
    const auto sampled = torch::grid_sampler(table, grid, kBicubic, kBorder, /*align_corners=*/false); // [1, width, N, 1]
    return sampled.squeeze(0).squeeze(-1).t().to(positionTable_.scalar_type());
}

torch::Tensor VisionTower::glmMerge(const torch::Tensor& blocksOut, VisionTrace* trace) const
{
    const GlmHead& g = glmHead_;
    const auto x = norm(blocksOut, g.postNormW, {});
    // The Conv2d with kernel = stride = merge over one merge window (its rows are consecutive) is a matmul of
    // the window's [width, merge, merge] values, flattened channel-major, with the flattened kernel.
    const int64_t unit = cfg_.mergeSize * cfg_.mergeSize, width = cfg_.width;
    const auto windows = x.reshape({-1, unit, width}).transpose(1, 2).reshape({-1, width * unit});
    const auto down = dense(windows, g.downsampleW.reshape({g.downsampleW.size(0), -1}), g.downsampleB);
    if (trace) {
        trace->postLayernorm = x;
        trace->downsample = down;
    }
    auto h = dense(down, g.projW);
    h = torch::gelu(torch::layer_norm(h, {h.size(-1)}, g.normW, g.normB, 1e-5));
    const auto gate = dense(h, g.gateW), up = dense(h, g.upW);
    return dense(torch::silu(gate) * up, g.downW); // hidden_act: silu (model_config.cpp checks)
}

} // namespace ropescope::model

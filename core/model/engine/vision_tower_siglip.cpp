// PaddleOCR-VL's parts of the vision tower (a SigLIP NaViT): its tensors under the Hub's names, the learned
// position table resized bilinearly to each image's patch grid, and the projector that merges 2x2 patches
// into the decoder's width. The encoder layers are the Qwen2-VL blocks of vision_tower.cpp (LayerNorm,
// attention per image with the 2-D rotary, fc1 -> GELU(tanh) -> fc2), their q, k and v fused at load.
// Unlike Qwen's and GLM's, these patches arrive in raster order, and only the projector groups them 2x2.
#include "core/model/engine/vision_tower.h"

#include "core/model/engine/dense.h"

#include <torch/types.h>
#include <torch/nn/functional/upsampling.h>

namespace ropescope::model {
namespace {

const std::string kVision = "visual.vision_model.";
const std::string kProjector = "mlp_AR.";

} // namespace

void VisionTower::loadSiglip(const Checkpoint& ck, torch::Dtype dtype)
{
    const int64_t w = cfg_.width, h = cfg_.mlpHidden, merged = w * cfg_.mergeSize * cfg_.mergeSize;
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device_, dtype); };
    patchW_ = t(kVision + "embeddings.patch_embedding.weight", {w, cfg_.inChannels, cfg_.patchSize, cfg_.patchSize}).reshape({w, -1});
    patchB_ = t(kVision + "embeddings.patch_embedding.bias", {w});
    positionTable_ = t(kVision + "embeddings.position_embedding.weight", {cfg_.positionEmbeddings, w});
    for (int i = 0; i < cfg_.depth; ++i) {
        const std::string p = kVision + "encoder.layers." + std::to_string(i) + ".";
        Block b;
        b.norm1W = t(p + "layer_norm1.weight", {w});
        b.norm1B = t(p + "layer_norm1.bias", {w});
        b.norm2W = t(p + "layer_norm2.weight", {w});
        b.norm2B = t(p + "layer_norm2.bias", {w});
        b.qkvW = torch::cat(
            {t(p + "self_attn.q_proj.weight", {w, w}), t(p + "self_attn.k_proj.weight", {w, w}), t(p + "self_attn.v_proj.weight", {w, w})});
        b.qkvB =
            torch::cat({t(p + "self_attn.q_proj.bias", {w}), t(p + "self_attn.k_proj.bias", {w}), t(p + "self_attn.v_proj.bias", {w})});
        b.projW = t(p + "self_attn.out_proj.weight", {w, w});
        b.projB = t(p + "self_attn.out_proj.bias", {w});
        b.fc1W = t(p + "mlp.fc1.weight", {h, w});
        b.fc1B = t(p + "mlp.fc1.bias", {h});
        b.fc2W = t(p + "mlp.fc2.weight", {w, h});
        b.fc2B = t(p + "mlp.fc2.bias", {w});
        blocks_.push_back(std::move(b));
    }
    SiglipHead& s = siglipHead_;
    s.postNormW = t(kVision + "post_layernorm.weight", {w});
    s.postNormB = t(kVision + "post_layernorm.bias", {w});
    s.preNormW = t(kProjector + "pre_norm.weight", {w});
    s.preNormB = t(kProjector + "pre_norm.bias", {w});
    s.linear1W = t(kProjector + "linear_1.weight", {merged, merged});
    s.linear1B = t(kProjector + "linear_1.bias", {merged});
    s.linear2W = t(kProjector + "linear_2.weight", {cfg_.outHidden, merged});
    s.linear2B = t(kProjector + "linear_2.bias", {cfg_.outHidden});
}

torch::Tensor VisionTower::bilinearPositions(const std::vector<int64_t>& grids) const
{
    // The side x side table as an image [1, width, side, side], resized to each image's h x w patch grid
    // (F.interpolate, bilinear, align_corners=False, no antialias) in float32, flattened in raster order and
    // repeated per frame.
    const int64_t side = cfg_.positionGridSide(), width = positionTable_.size(1);
    const auto table = positionTable_.to(torch::kFloat32).view({side, side, width}).permute({2, 0, 1}).unsqueeze(0);
    std::vector<torch::Tensor> parts;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        const auto resized = torch::upsample_bilinear2d(table, {h, w}, /*align_corners=*/false); // [1, width, h, w]
        parts.push_back(resized.squeeze(0).reshape({width, h * w}).t().repeat({t, 1}));
    }
    return torch::cat(parts, 0).to(positionTable_.scalar_type());
}

torch::Tensor VisionTower::siglipProject(const torch::Tensor& x, const std::vector<int64_t>& grids, VisionTrace* trace) const
{
    const SiglipHead& s = siglipHead_;
    const auto normed = torch::layer_norm(x, {x.size(-1)}, s.preNormW, s.preNormB, 1e-5);
    // Per image, merged token (a, b) concatenates the patches (2a, 2b), (2a, 2b+1), (2a+1, 2b), (2a+1, 2b+1)
    // of its raster-ordered grid.
    const int64_t m = cfg_.mergeSize, width = x.size(-1);
    std::vector<torch::Tensor> merged;
    int64_t row = 0;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        merged.push_back(normed.narrow(0, row, t * h * w)
                             .view({t, h / m, m, w / m, m, width})
                             .permute({0, 1, 3, 2, 4, 5})
                             .reshape({t * (h / m) * (w / m), m * m * width}));
        row += t * h * w;
    }
    const auto rows = torch::cat(merged, 0);
    if (trace) {
        trace->projectorPreNorm = normed;
        trace->projectorMerged = rows;
    }
    const auto hidden = torch::gelu(dense(rows, s.linear1W, s.linear1B));
    return dense(hidden, s.linear2W, s.linear2B);
}

} // namespace ropescope::model

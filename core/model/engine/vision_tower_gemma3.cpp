// Gemma 3's vision tower, as transformers runs it (siglip/modeling_siglip.py's SiglipVisionTransformer without its
// head, gemma3/modeling_gemma3.py's Gemma3MultiModalProjector): the Conv2d patch embedding with bias (a matmul over
// each patch's pixels), the learned position table (image_size / patch_size patches a side, no resampling), pre-LN
// encoder blocks with biases (LayerNorm, attention over the image's patches at head_dim^-0.5, fc1 -> gelu-tanh ->
// fc2), the post LayerNorm; then the projector: AvgPool2d of mergeSize x mergeSize over the patch grid (row-major),
// Gemma3RMSNorm (x (1 + w), eps = vision_config.layer_norm_eps, as transformers builds mm_soft_emb_norm) and
// x @ mm_input_projection_weight [width, text hidden].
//
// Rows: one per patch, raster order (row by row), each patch's pixels in (c, py, px) order, i.e. the Conv2d weight's
// own [width, C, P, P] flattened; grid (1, side, side) per image (model::gemma3PatchRows makes them from
// pixel_values [n, C, S, S]).
#include "core/model/engine/vision_tower.h"

#include "core/model/engine/dense.h"

#include <torch/types.h>

namespace ropescope::model {
namespace {

// transformers 5's names; the Hub's transformers-4 layout (vision_tower.*, multi_modal_projector.*) is found by
// Checkpoint's aliases.
const std::string kVision = "model.vision_tower.vision_model.";
const std::string kProjector = "model.multi_modal_projector.";

} // namespace

void VisionTower::loadGemma3(const Checkpoint& ck, torch::Dtype dtype)
{
    const int64_t w = cfg_.width, h = cfg_.mlpHidden, side = cfg_.imageSize / cfg_.patchSize;
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device_, dtype); };
    patchW_ = t(kVision + "embeddings.patch_embedding.weight", {w, cfg_.inChannels, cfg_.patchSize, cfg_.patchSize}).reshape({w, -1});
    patchB_ = t(kVision + "embeddings.patch_embedding.bias", {w});
    positionTable_ = t(kVision + "embeddings.position_embedding.weight", {side * side, w});
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
    Gemma3Head& g = gemma3Head_;
    g.postNormW = t(kVision + "post_layernorm.weight", {w});
    g.postNormB = t(kVision + "post_layernorm.bias", {w});
    g.softEmbNormW = t(kProjector + "mm_soft_emb_norm.weight", {w});
    g.projection = t(kProjector + "mm_input_projection_weight", {w, cfg_.outHidden});
}

VisionFeatures VisionTower::forwardGemma3(const torch::Tensor& pixels, const std::vector<int64_t>& grids, VisionTrace* trace) const
{
    const int64_t side = cfg_.imageSize / cfg_.patchSize, m = cfg_.mergeSize, width = cfg_.width;
    const int64_t images = static_cast<int64_t>(grids.size() / 3);
    for (size_t i = 0; i + 2 < grids.size(); i += 3)
        if (grids[i] != 1 || grids[i + 1] != side || grids[i + 2] != side)
            throw ModelError("image_grid_thw: image " + std::to_string(i / 3) + " is (" + std::to_string(grids[i]) + ", " +
                             std::to_string(grids[i + 1]) + ", " + std::to_string(grids[i + 2]) + "); Gemma 3's tower takes images of " +
                             std::to_string(cfg_.imageSize) + " x " + std::to_string(cfg_.imageSize) + " px, grid (1, " +
                             std::to_string(side) + ", " + std::to_string(side) + ") (vision_config.image_size / patch_size)");
    if (pixels.size(0) != images * side * side)
        throw ModelError("pixel_values: " + std::to_string(pixels.size(0)) + " patches but image_grid_thw describes " +
                         std::to_string(images * side * side));
    auto x = dense(pixels.to(device_, patchW_.scalar_type()), patchW_, patchB_) + positionTable_.repeat({images, 1});
    if (trace) {
        trace->embeddings = x;
        trace->cuSeqlens = torch::tensor(frameBoundaries(grids));
    }
    const auto groups = groupBlocks(frameBoundaries(grids), x.size(0));
    for (const Block& b : blocks_) {
        x = x + attend(b, norm(x, b.norm1W, b.norm1B), torch::Tensor(), torch::Tensor(), groups);
        x = x + mlp(b, norm(x, b.norm2W, b.norm2B));
        if (trace)
            trace->blockOutputs.push_back(x);
    }
    const Gemma3Head& g = gemma3Head_;
    x = torch::layer_norm(x, {width}, g.postNormW, g.postNormB, cfg_.normEps);
    // The projector: [images, width, side, side] average-pooled, back to rows in raster order.
    const auto grid = x.view({images, side, side, width}).permute({0, 3, 1, 2});
    const auto pooled = torch::avg_pool2d(grid, {m, m}, {m, m}).flatten(2).transpose(1, 2).reshape({-1, width});
    const auto pf = pooled.to(torch::kFloat32);
    const auto normed =
        (pf * torch::rsqrt(pf.pow(2).mean(-1, true) + cfg_.normEps) * (1.0 + g.softEmbNormW.to(torch::kFloat32))).to(x.scalar_type());
    if (trace) {
        trace->postLayernorm = x;
        trace->pooled = pooled;
        trace->softTokens = normed;
    }
    VisionFeatures out;
    out.embeds = dense(normed, g.projection.t()); // the checkpoint stores it [in, out]: x @ W is dense against W^T
    return out;
}

} // namespace ropescope::model

// Gemma 4's vision tower, as transformers 5.16 runs it (modeling_gemma4.py at c1ff11866b: Gemma4VisionPatchEmbedder,
// Gemma4VisionEncoder, Gemma4VisionPooler, Gemma4VisionModel, Gemma4MultimodalEmbedder): each image's valid patches
// (raster order, x fastest) projected from 2 * (pixels - 0.5) plus an (x, y) position table; encoder blocks of four
// RMSNorms, attention over the image's own patches with q/k/v norms, scaling 1.0 and a 2-D rotary (the first half of
// each head turns by x, the second by y, each half a rotate_half rope of theta vision_config.rope_theta), a gelu-tanh
// gated MLP, every linear clipped when use_clipped_linears; then the 3x3 pooler (average of each kernel x
// sqrt(width)), standardize, and embed_vision (a weightless RMSNorm and a linear to the text width).
//
// transformers pads every image to the processor's patch budget with rows at position (-1, -1): their keys are
// masked, the pooler zeroes them and strips the empty soft tokens, so the valid rows' results do not depend on them
// and RopeScope never forms them (docs/ENGINE.md, "Gemma's towers").
#include "core/model/engine/vision_tower.h"

#include "core/model/engine/dense.h"
#include "kernels/rotary.h"

#include <torch/types.h>

#include <cmath>

namespace ropescope::model {
namespace {

const std::string kTower = "model.vision_tower.";
const std::string kEmbedProjection = "model.embed_vision.embedding_projection.weight";

// Gemma4RMSNorm: x * pow(mean(x^2) + eps, -0.5), times w when it has one, in float32; back in x's dtype.
torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps)
{
    const auto xf = x.to(torch::kFloat32);
    auto out = xf * torch::pow(xf.pow(2).mean(-1, true) + eps, -0.5);
    if (w.defined())
        out = out * w.to(torch::kFloat32);
    return out.to(x.scalar_type());
}

// apply_multidimensional_rope with two axes: x [H, N, d]; cos, sin [N, d] (x's tables, then y's). Each half of a
// head is rotated on its own (pairs (i, i + d/4) within the half).
torch::Tensor rotate2d(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    const int64_t half = x.size(-1) / 2;
    auto part = [&](int64_t from) {
        return kernels::applyRotary(x.narrow(-1, from, half), cos.narrow(-1, from, half), sin.narrow(-1, from, half));
    };
    return torch::cat({part(0), part(half)}, -1);
}

// Each (t, h, w) checked against the tower: whole pooling kernels, positions inside the table, rows for every patch.
void checkGrids(const std::vector<int64_t>& grids, int64_t rows, const VisionConfig& v)
{
    const int64_t k = v.poolingKernel, side = v.positionTableSide;
    int64_t patches = 0;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        const std::string image = "image_grid_thw: image " + std::to_string(i / 3) + " (" + std::to_string(t) + ", " + std::to_string(h) +
            ", " + std::to_string(w) + ")";
        if (t < 1 || h < 1 || w < 1)
            throw ModelError(image + ": every (t, h, w) must be positive");
        if (h % k != 0 || w % k != 0)
            throw ModelError(image + ": its " + std::to_string(h) + " x " + std::to_string(w) + " patches are not whole " +
                             std::to_string(k) + " x " + std::to_string(k) + " pooling kernels (vision_config.pooling_kernel_size)");
        if (h > side || w > side)
            throw ModelError(image + ": its patch positions reach " + std::to_string(std::max(h, w) - 1) + ", outside the " +
                             std::to_string(side) + " of Gemma 4's position table (vision_config.position_embedding_size)");
        patches += t * h * w;
    }
    if (patches != rows)
        throw ModelError("pixel_values: " + std::to_string(rows) + " patches but image_grid_thw describes " + std::to_string(patches));
}

} // namespace

void VisionTower::loadGemma4(const Checkpoint& ck, torch::Dtype dtype)
{
    const int64_t w = cfg_.width, h = cfg_.mlpHidden, d = cfg_.headDim(), inner = int64_t(cfg_.heads) * d;
    const std::string config = ck.dir().toStdString() + "/config.json: vision_config.";
    if (d % 4 != 0)
        throw BadInputFile(config + "head_dim " + std::to_string(d) +
                           " is not a multiple of 4: Gemma 4's 2-D rotary turns each head's halves in rotate_half pairs");
    if (cfg_.act != "gelu_pytorch_tanh")
        throw BadInputFile(config + "hidden_activation '" + cfg_.act +
                           "': Gemma 4's tower runs gelu_pytorch_tanh, the only one RopeScope runs for it");
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device_, dtype); };
    auto linear = [&](const std::string& name, int64_t out, int64_t in) {
        ClippedLinear l;
        l.w = t(name + ".linear.weight", {out, in});
        if (cfg_.clippedLinears) { // scalar buffers
            l.inMin = t(name + ".input_min", {});
            l.inMax = t(name + ".input_max", {});
            l.outMin = t(name + ".output_min", {});
            l.outMax = t(name + ".output_max", {});
        }
        return l;
    };
    patchW_ = t(kTower + "patch_embedder.input_proj.weight", {w, cfg_.patchDim()});
    Gemma4Tower& g = gemma4Tower_;
    g.positionTable = t(kTower + "patch_embedder.position_embedding_table", {2, cfg_.positionTableSide, w});
    for (int i = 0; i < cfg_.depth; ++i) {
        const std::string p = kTower + "encoder.layers." + std::to_string(i) + ".";
        Gemma4Block b;
        b.q = linear(p + "self_attn.q_proj", inner, w);
        b.k = linear(p + "self_attn.k_proj", inner, w);
        b.v = linear(p + "self_attn.v_proj", inner, w);
        b.o = linear(p + "self_attn.o_proj", w, inner);
        b.gate = linear(p + "mlp.gate_proj", h, w);
        b.up = linear(p + "mlp.up_proj", h, w);
        b.down = linear(p + "mlp.down_proj", w, h);
        b.qNorm = t(p + "self_attn.q_norm.weight", {d});
        b.kNorm = t(p + "self_attn.k_norm.weight", {d});
        b.inputNorm = t(p + "input_layernorm.weight", {w});
        b.postAttentionNorm = t(p + "post_attention_layernorm.weight", {w});
        b.preFeedforwardNorm = t(p + "pre_feedforward_layernorm.weight", {w});
        b.postFeedforwardNorm = t(p + "post_feedforward_layernorm.weight", {w});
        g.blocks.push_back(std::move(b));
    }
    if (cfg_.standardize) {
        g.stdBias = t(kTower + "std_bias", {w});
        g.stdScale = t(kTower + "std_scale", {w});
    }
    g.embedProjection = t(kEmbedProjection, {cfg_.outHidden, w});
}

torch::Tensor VisionTower::clipped(const ClippedLinear& l, const torch::Tensor& x) const
{
    if (!l.inMin.defined())
        return dense(x, l.w);
    return torch::clamp(dense(torch::clamp(x, l.inMin, l.inMax), l.w), l.outMin, l.outMax);
}

torch::Tensor VisionTower::gemma4Attention(const Gemma4Block& b, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                           const std::vector<BlockGroup>& groups) const
{
    const int64_t n = x.size(0), heads = cfg_.heads, d = cfg_.headDim();
    // [N, H * d] -> per head [H, N, d], normed over d (v_norm has no weight).
    auto perHead = [&](const ClippedLinear& l, const torch::Tensor& norm) {
        return rmsNorm(clipped(l, x).view({n, heads, d}), norm, cfg_.normEps).transpose(0, 1);
    };
    const auto q =
        rotate2d(perHead(b.q, b.qNorm), cos, sin) * std::sqrt(static_cast<double>(d)); // scaling 1.0: the kernel divides by sqrt(d)
    const auto k = rotate2d(perHead(b.k, b.kNorm), cos, sin);
    const auto v = perHead(b.v, torch::Tensor());
    return clipped(b.o, attendGroups(q, k, v, groups));
}

VisionFeatures VisionTower::forwardGemma4(const torch::Tensor& pixels, const std::vector<int64_t>& grids, VisionTrace* trace) const
{
    checkGrids(grids, pixels.size(0), cfg_);
    const Gemma4Tower& g = gemma4Tower_;
    const int64_t k = cfg_.poolingKernel, width = cfg_.width, d = cfg_.headDim();
    const double eps = cfg_.normEps;
    // Each patch's (x, y) = (column, row) in its image or frame.
    std::vector<torch::Tensor> xs, ys;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const auto index = torch::arange(grids[i + 1] * grids[i + 2], torch::kInt64);
        xs.push_back(index.remainder(grids[i + 2]).repeat({grids[i]}));
        ys.push_back(index.div(grids[i + 2], "floor").repeat({grids[i]}));
    }
    const auto px = torch::cat(xs).to(device_), py = torch::cat(ys).to(device_);
    // 2 * (x - 0.5) in the pixels' float32, then the model's dtype, as the patch embedder.
    const auto scaled = (2 * (pixels.to(device_, torch::kFloat32) - 0.5)).to(patchW_.scalar_type());
    auto x = dense(scaled, patchW_) + (g.positionTable[0].index_select(0, px) + g.positionTable[1].index_select(0, py));
    // The 2-D rotary: per axis cat(freqs, freqs) of theta^(-2i / (d/2)), x's table then y's.
    const auto inv = kernels::inverseFrequencies(cfg_.ropeTheta, d / 2).to(device_);
    auto axis = [&](const torch::Tensor& p) {
        const auto f = torch::outer(p.to(torch::kFloat32), inv);
        return torch::cat({f, f}, -1);
    };
    const auto angles = torch::cat({axis(px), axis(py)}, -1);
    const auto cos = angles.cos().to(x.scalar_type()), sin = angles.sin().to(x.scalar_type());
    if (trace) {
        trace->embeddings = x;
        trace->rotaryCos = cos;
        trace->rotarySin = sin;
        trace->cuSeqlens = torch::tensor(frameBoundaries(grids));
    }
    const auto groups = groupBlocks(frameBoundaries(grids), x.size(0));
    for (const Gemma4Block& b : g.blocks) {
        x = x + rmsNorm(gemma4Attention(b, rmsNorm(x, b.inputNorm, eps), cos, sin, groups), b.postAttentionNorm, eps);
        const auto h = rmsNorm(x, b.preFeedforwardNorm, eps);
        x = x + rmsNorm(clipped(b.down, torch::gelu(clipped(b.gate, h), "tanh") * clipped(b.up, h)), b.postFeedforwardNorm, eps);
        if (trace)
            trace->blockOutputs.push_back(x);
    }
    // The pooler, in float32: each k x k kernel of a frame (raster order over kernels) averaged with weights 1/k^2,
    // then x sqrt(width).
    const auto xf = x.to(torch::kFloat32);
    const float weight = 1.0f / static_cast<float>(k * k);
    std::vector<torch::Tensor> pooled;
    int64_t row = 0;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t h = grids[i + 1], w = grids[i + 2];
        for (int64_t f = 0; f < grids[i]; ++f, row += h * w)
            pooled.push_back((xf.narrow(0, row, h * w).view({h / k, k, w / k, k, width}) * weight).sum({1, 3}).reshape({-1, width}));
    }
    const auto soft = torch::cat(pooled) * std::sqrt(static_cast<double>(width));
    const auto standardised = cfg_.standardize ? (soft - g.stdBias.to(torch::kFloat32)) * g.stdScale.to(torch::kFloat32) : soft;
    const auto tokens = standardised.to(x.scalar_type());
    if (trace) {
        trace->pooled = soft;
        trace->softTokens = tokens;
    }
    VisionFeatures out;
    out.embeds = dense(rmsNorm(tokens, torch::Tensor(), eps), g.embedProjection);
    return out;
}

} // namespace ropescope::model

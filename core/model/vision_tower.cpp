#include "vision_tower.h"

#include "kernels/attention.h"
#include "kernels/rotary.h"

#include <algorithm>

namespace ropescope::model {
namespace {

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    return torch::nn::functional::linear(x, w, b);
}

std::vector<int64_t> toVector(const torch::Tensor& t)
{
    const auto c = t.to(torch::kCPU).to(torch::kInt64).contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

} // namespace

VisionTower::VisionTower(const Checkpoint& ck, torch::Device device, torch::Dtype dtype)
    : cfg_(ck.config().vision), qwen25_(ck.config().architecture == Architecture::Qwen25VL), device_(device)
{
    const int64_t w = cfg_.width, h = cfg_.mlpHidden;
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device, dtype); };
    patchW_ = t("visual.patch_embed.proj.weight", {w, cfg_.inChannels, cfg_.temporalPatch, cfg_.patchSize, cfg_.patchSize})
                  .reshape({w, -1});
    for (int i = 0; i < cfg_.depth; ++i) {
        const std::string p = "visual.blocks." + std::to_string(i) + ".";
        Block b;
        b.norm1W = t(p + "norm1.weight", {w});
        b.norm2W = t(p + "norm2.weight", {w});
        if (!qwen25_) {
            b.norm1B = t(p + "norm1.bias", {w});
            b.norm2B = t(p + "norm2.bias", {w});
        }
        b.qkvW = t(p + "attn.qkv.weight", {3 * w, w});
        b.qkvB = t(p + "attn.qkv.bias", {3 * w});
        b.projW = t(p + "attn.proj.weight", {w, w});
        b.projB = t(p + "attn.proj.bias", {w});
        if (!qwen25_) {
            b.fc1W = t(p + "mlp.fc1.weight", {h, w});
            b.fc1B = t(p + "mlp.fc1.bias", {h});
            b.fc2W = t(p + "mlp.fc2.weight", {w, h});
            b.fc2B = t(p + "mlp.fc2.bias", {w});
        } else {
            b.gateW = t(p + "mlp.gate_proj.weight", {h, w});
            b.gateB = t(p + "mlp.gate_proj.bias", {h});
            b.upW = t(p + "mlp.up_proj.weight", {h, w});
            b.upB = t(p + "mlp.up_proj.bias", {h});
            b.downW = t(p + "mlp.down_proj.weight", {w, h});
            b.downB = t(p + "mlp.down_proj.bias", {w});
        }
        blocks_.push_back(std::move(b));
    }
    const int64_t merged = w * cfg_.mergeSize * cfg_.mergeSize;
    mergerNormW_ = t("visual.merger.ln_q.weight", {w});
    if (!qwen25_)
        mergerNormB_ = t("visual.merger.ln_q.bias", {w});
    mergerFc1W_ = t("visual.merger.mlp.0.weight", {merged, merged});
    mergerFc1B_ = t("visual.merger.mlp.0.bias", {merged});
    mergerFc2W_ = t("visual.merger.mlp.2.weight", {cfg_.outHidden, merged});
    mergerFc2B_ = t("visual.merger.mlp.2.bias", {cfg_.outHidden});
}

std::vector<VisionTower::NamedWeight> VisionTower::weights()
{
    const int64_t w = cfg_.width;
    std::vector<NamedWeight> out{{"visual.patch_embed.proj.weight", &patchW_, {w, cfg_.inChannels, cfg_.temporalPatch, cfg_.patchSize, cfg_.patchSize}}};
    auto add = [&](const std::string& name, torch::Tensor& t) {
        if (t.defined())
            out.push_back({name, &t, t.sizes().vec()});
    };
    for (size_t i = 0; i < blocks_.size(); ++i) {
        Block& b = blocks_[i];
        const std::string p = "visual.blocks." + std::to_string(i) + ".";
        add(p + "norm1.weight", b.norm1W);
        add(p + "norm1.bias", b.norm1B);
        add(p + "norm2.weight", b.norm2W);
        add(p + "norm2.bias", b.norm2B);
        add(p + "attn.qkv.weight", b.qkvW);
        add(p + "attn.qkv.bias", b.qkvB);
        add(p + "attn.proj.weight", b.projW);
        add(p + "attn.proj.bias", b.projB);
        add(p + "mlp.fc1.weight", b.fc1W);
        add(p + "mlp.fc1.bias", b.fc1B);
        add(p + "mlp.fc2.weight", b.fc2W);
        add(p + "mlp.fc2.bias", b.fc2B);
        add(p + "mlp.gate_proj.weight", b.gateW);
        add(p + "mlp.gate_proj.bias", b.gateB);
        add(p + "mlp.up_proj.weight", b.upW);
        add(p + "mlp.up_proj.bias", b.upB);
        add(p + "mlp.down_proj.weight", b.downW);
        add(p + "mlp.down_proj.bias", b.downB);
    }
    add("visual.merger.ln_q.weight", mergerNormW_);
    add("visual.merger.ln_q.bias", mergerNormB_);
    add("visual.merger.mlp.0.weight", mergerFc1W_);
    add("visual.merger.mlp.0.bias", mergerFc1B_);
    add("visual.merger.mlp.2.weight", mergerFc2W_);
    add("visual.merger.mlp.2.bias", mergerFc2B_);
    return out;
}

torch::Tensor VisionTower::norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) const
{
    if (!qwen25_)
        return torch::layer_norm(x, {x.size(-1)}, w, b, 1e-6);
    const auto xf = x.to(torch::kFloat32);
    return w * (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-6)).to(x.scalar_type());
}

torch::Tensor VisionTower::mlp(const Block& b, const torch::Tensor& x) const
{
    if (!qwen25_) {
        const auto hidden = dense(x, b.fc1W, b.fc1B);
        const auto act = cfg_.act == "quick_gelu" ? hidden * torch::sigmoid(1.702 * hidden) : torch::gelu(hidden);
        return dense(act, b.fc2W, b.fc2B);
    }
    return dense(torch::silu(dense(x, b.gateW, b.gateB)) * dense(x, b.upW, b.upB), b.downW, b.downB);
}

torch::Tensor VisionTower::attend(const Block& b, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                  const std::vector<int64_t>& boundaries) const
{
    const int64_t n = x.size(0), heads = cfg_.heads;
    const auto qkv = dense(x, b.qkvW, b.qkvB).reshape({n, 3, heads, -1}).permute({1, 2, 0, 3}); // [3, H, N, d]
    const auto q = kernels::applyRotary(qkv[0], cos, sin);
    const auto k = kernels::applyRotary(qkv[1], cos, sin);
    const auto v = qkv[2];
    // Attention is block-diagonal (per image, or per window): attend within each block only. Equal-sized
    // blocks (a batch of same-size images, or full windows) go through one batched call.
    auto merge = [&](const torch::Tensor& ctx) { return ctx.transpose(0, 1).reshape({ctx.size(1), -1}); }; // [H, len, d] -> [len, H*d]
    std::vector<int64_t> sizes;
    for (size_t i = 1; i < boundaries.size(); ++i)
        sizes.push_back(boundaries[i] - boundaries[i - 1]);
    const bool uniform = !sizes.empty() && std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes.front(); })
                         && boundaries.front() == 0 && boundaries.back() == n;
    torch::Tensor context;
    if (uniform && sizes.size() > 1) {
        const int64_t blocks = static_cast<int64_t>(sizes.size()), len = sizes.front();
        auto fold = [&](const torch::Tensor& t) { return t.reshape({heads, blocks, len, -1}).transpose(0, 1).reshape({blocks * heads, len, -1}); };
        const auto ctx = kernels::attention(fold(q), fold(k), fold(v), {}); // [blocks*H, len, d]
        context = ctx.reshape({blocks, heads, len, -1}).permute({0, 2, 1, 3}).reshape({n, -1});
    } else {
        std::vector<torch::Tensor> parts;
        for (size_t i = 1; i < boundaries.size(); ++i) {
            const int64_t start = boundaries[i - 1], len = boundaries[i] - boundaries[i - 1];
            if (len > 0)
                parts.push_back(merge(kernels::attention(q.narrow(1, start, len), k.narrow(1, start, len), v.narrow(1, start, len), {})));
        }
        context = torch::cat(parts, 0);
    }
    return dense(context, b.projW, b.projB);
}

torch::Tensor VisionTower::rotaryFreqs(const torch::Tensor& gridThw) const
{
    const int64_t m = cfg_.mergeSize;
    const auto grids = toVector(gridThw);
    std::vector<torch::Tensor> ids;
    int64_t maxGrid = 1;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        maxGrid = std::max({maxGrid, h, w});
        // Positions in merge-window-major order: the order the processor flattens patches in.
        auto hpos = torch::arange(h).unsqueeze(1).expand({h, w}).reshape({h / m, m, w / m, m}).permute({0, 2, 1, 3}).flatten();
        auto wpos = torch::arange(w).unsqueeze(0).expand({h, w}).reshape({h / m, m, w / m, m}).permute({0, 2, 1, 3}).flatten();
        ids.push_back(torch::stack({hpos, wpos}, -1).repeat({t, 1}));
    }
    const auto pos = torch::cat(ids, 0).to(device_);
    const auto inv = kernels::inverseFrequencies(10000.0, cfg_.headDim() / 2).to(device_);
    const auto full = torch::outer(torch::arange(maxGrid, torch::TensorOptions().dtype(torch::kFloat32).device(device_)), inv);
    return full.index_select(0, pos.flatten()).reshape({pos.size(0), -1}); // [N, 2 * d/4] = (h angles, w angles)
}

void VisionTower::windowIndex(const torch::Tensor& gridThw, torch::Tensor& index, std::vector<int64_t>& boundaries) const
{
    const int64_t unit = cfg_.mergeSize * cfg_.mergeSize;
    const int64_t win = cfg_.windowSize / cfg_.mergeSize / cfg_.patchSize; // merged tokens per window side
    const auto grids = toVector(gridThw);
    std::vector<torch::Tensor> parts;
    boundaries = {0};
    int64_t offset = 0;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], gh = grids[i + 1] / cfg_.mergeSize, gw = grids[i + 2] / cfg_.mergeSize;
        const int64_t padH = win - gh % win, padW = win - gw % win; // as Hugging Face: a full window when divisible
        const int64_t nh = (gh + padH) / win, nw = (gw + padW) / win;
        auto idx = torch::arange(t * gh * gw).reshape({t, gh, gw});
        idx = torch::constant_pad_nd(idx, {0, padW, 0, padH}, -100);
        idx = idx.reshape({t, nh, win, nw, win}).permute({0, 1, 3, 2, 4}).reshape({t, nh * nw, win, win});
        const auto counts = toVector((idx != -100).sum({2, 3}).reshape({-1}));
        const auto flat = idx.reshape({-1});
        parts.push_back(flat.masked_select(flat != -100) + offset);
        for (int64_t c : counts) {
            const int64_t next = boundaries.back() + c * unit;
            if (next != boundaries.back()) // unique_consecutive: empty windows add no boundary
                boundaries.push_back(next);
        }
        offset += t * gh * gw;
    }
    index = torch::cat(parts, 0).to(device_);
}

torch::Tensor VisionTower::forward(const torch::Tensor& pixels, const torch::Tensor& gridThw, VisionTrace* trace) const
{
    if (pixels.dim() != 2 || pixels.size(1) != cfg_.patchDim())
        throw ModelError("pixel_values: expected [N, " + std::to_string(cfg_.patchDim()) + "] patches");
    const auto grids = toVector(gridThw);
    int64_t patches = 0;
    std::vector<int64_t> imageBoundaries{0};
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        if (grids[i] < 1 || grids[i + 1] % cfg_.mergeSize || grids[i + 2] % cfg_.mergeSize || grids[i + 1] < 1 || grids[i + 2] < 1)
            throw ModelError("image_grid_thw: each (t, h, w) must be positive with h and w divisible by the merge size");
        for (int64_t f = 0; f < grids[i]; ++f) // full attention is per frame, as cu_seqlens in Hugging Face
            imageBoundaries.push_back(imageBoundaries.back() + grids[i + 1] * grids[i + 2]);
        patches += grids[i] * grids[i + 1] * grids[i + 2];
    }
    if (patches != pixels.size(0))
        throw ModelError("pixel_values: " + std::to_string(pixels.size(0)) + " patches but image_grid_thw describes " + std::to_string(patches));

    const auto x0 = pixels.to(device_, patchW_.scalar_type());
    auto x = torch::matmul(x0, patchW_.t()); // the Conv3d with stride = kernel is a matmul over flattened patches
    auto freqs = rotaryFreqs(gridThw);
    if (trace) {
        trace->patchEmbeds = x;
        trace->rotaryFreqs = freqs;
        trace->cuSeqlens = torch::tensor(imageBoundaries);
    }

    const int64_t unit = cfg_.mergeSize * cfg_.mergeSize;
    torch::Tensor window;
    std::vector<int64_t> windowBoundaries;
    if (qwen25_) {
        windowIndex(gridThw, window, windowBoundaries);
        x = x.reshape({-1, unit, x.size(1)}).index_select(0, window).reshape({-1, x.size(1)});
        freqs = freqs.reshape({-1, unit, freqs.size(1)}).index_select(0, window).reshape({-1, freqs.size(1)});
        if (trace) {
            trace->windowIndex = window;
            trace->cuWindowSeqlens = torch::tensor(windowBoundaries);
        }
    }
    const auto emb = torch::cat({freqs, freqs}, -1);
    const auto cos = emb.cos(), sin = emb.sin();

    for (size_t i = 0; i < blocks_.size(); ++i) {
        const Block& b = blocks_[i];
        const bool full = !qwen25_ || std::find(cfg_.fullAttentionBlocks.begin(), cfg_.fullAttentionBlocks.end(), static_cast<int>(i))
                                          != cfg_.fullAttentionBlocks.end();
        x = x + attend(b, norm(x, b.norm1W, b.norm1B), cos, sin, full ? imageBoundaries : windowBoundaries);
        x = x + mlp(b, norm(x, b.norm2W, b.norm2B));
        if (trace)
            trace->blockOutputs.push_back(x);
    }
    auto merged = norm(x, mergerNormW_, mergerNormB_).reshape({-1, cfg_.width * unit});
    merged = dense(torch::gelu(dense(merged, mergerFc1W_, mergerFc1B_)), mergerFc2W_, mergerFc2B_);
    if (qwen25_)
        merged = merged.index_select(0, torch::argsort(window));
    return merged;
}

} // namespace ropescope::model

#include "core/model/engine/vision_tower.h"

#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/dense.h"
#include "kernels/attention.h"
#include "kernels/rotary.h"

#include <torch/types.h>
#include <algorithm>
#include <map>

namespace ropescope::model {
namespace {

// The activations config.json names (model_config.cpp accepts only these).
torch::Tensor activation(const torch::Tensor& x, const std::string& name)
{
    if (name == "quick_gelu")
        return x * torch::sigmoid(1.702 * x);
    if (name == "gelu_pytorch_tanh")
        return torch::gelu(x, "tanh");
    if (name == "silu")
        return torch::silu(x);
    return torch::gelu(x);
}

// Checkpoint names of the tower's own tensors (blocks and mergers have their tables below).
const char* const kPatchWeight = "visual.patch_embed.proj.weight";
const char* const kPatchBias = "visual.patch_embed.proj.bias";
const char* const kPositionTable = "visual.pos_embed.weight";

std::vector<int64_t> toVector(const torch::Tensor& t)
{
    const auto c = t.to(torch::kCPU).to(torch::kInt64).contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

} // namespace

VisionTower::VisionTower(const Checkpoint& ck, torch::Device device, torch::Dtype dtype)
    : cfg_(ck.config().vision), arch_(ck.config().architecture), qwen25_(arch_ == Architecture::Qwen25VL),
      glm_(arch_ == Architecture::GlmV), siglip_(arch_ == Architecture::PaddleOcrVl), gemma4_(arch_ == Architecture::Gemma4),
      gemma3_(arch_ == Architecture::Gemma3), device_(device)
{
    if (siglip_) {
        loadSiglip(ck, dtype);
        return;
    }
    if (gemma4_) { // the Gemma towers are their own (vision_tower_gemma*.cpp)
        loadGemma4(ck, dtype);
        return;
    }
    if (gemma3_) {
        loadGemma3(ck, dtype);
        return;
    }
    const bool qwen3 = hasQwen3Vision(arch_);
    const int64_t w = cfg_.width;
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device, dtype); };
    patchW_ = t(kPatchWeight, {w, cfg_.inChannels, cfg_.temporalPatch, cfg_.patchSize, cfg_.patchSize}).reshape({w, -1});
    if (qwen3 || glm_)
        patchB_ = t(kPatchBias, {w});
    if (qwen3)
        positionTable_ = t(kPositionTable, {cfg_.positionEmbeddings, w});
    if (glm_)
        loadGlm(ck, dtype);
    const std::vector<BlockTensor> table = blockTensors();
    for (int i = 0; i < cfg_.depth; ++i) {
        const std::string p = "visual.blocks." + std::to_string(i) + ".";
        Block b;
        for (const BlockTensor& bt : table)
            b.*bt.member = t(p + bt.name, bt.shape);
        blocks_.push_back(std::move(b));
    }
    if (!glm_)
        merger_ = loadMerger(ck, "visual.merger.", false, dtype);
    for (size_t k = 0; k < cfg_.deepstackBlocks.size(); ++k)
        deepstackMergers_.push_back(loadMerger(ck, "visual.deepstack_merger_list." + std::to_string(k) + ".", true, dtype));
}

std::vector<VisionTower::MergerTensor> VisionTower::mergerTensors(bool normAfterMerge) const
{
    const bool qwen3 = hasQwen3Vision(arch_);
    const int64_t merged = cfg_.width * cfg_.mergeSize * cfg_.mergeSize, normed = normAfterMerge ? merged : cfg_.width;
    const std::string norm = qwen3 ? "norm." : "ln_q.", fc1 = qwen3 ? "linear_fc1." : "mlp.0.", fc2 = qwen3 ? "linear_fc2." : "mlp.2.";
    std::vector<MergerTensor> out{{norm + "weight", &Merger::normW, {normed}}};
    if (!qwen25_)
        out.push_back({norm + "bias", &Merger::normB, {normed}});
    out.insert(out.end(),
               {{fc1 + "weight", &Merger::fc1W, {merged, merged}},
                {fc1 + "bias", &Merger::fc1B, {merged}},
                {fc2 + "weight", &Merger::fc2W, {cfg_.outHidden, merged}},
                {fc2 + "bias", &Merger::fc2B, {cfg_.outHidden}}});
    return out;
}

VisionTower::Merger VisionTower::loadMerger(const Checkpoint& ck, const std::string& prefix, bool normAfterMerge, torch::Dtype dtype) const
{
    Merger m;
    m.prefix = prefix;
    m.normAfterMerge = normAfterMerge;
    for (const MergerTensor& mt : mergerTensors(normAfterMerge))
        m.*mt.member = ck.tensor(prefix + mt.name, mt.shape).to(device_, dtype);
    return m;
}

std::vector<VisionTower::BlockTensor> VisionTower::blockTensors() const
{
    const int64_t w = cfg_.width, h = cfg_.mlpHidden;
    if (glm_) { // RMSNorms, no proj bias, a qkv bias only with attention_bias, a gated MLP without biases
        std::vector<BlockTensor> out{{"norm1.weight", &Block::norm1W, {w}},           {"norm2.weight", &Block::norm2W, {w}},
                                     {"attn.qkv.weight", &Block::qkvW, {3 * w, w}},   {"attn.proj.weight", &Block::projW, {w, w}},
                                     {"mlp.gate_proj.weight", &Block::gateW, {h, w}}, {"mlp.up_proj.weight", &Block::upW, {h, w}},
                                     {"mlp.down_proj.weight", &Block::downW, {w, h}}};
        if (cfg_.attentionBias)
            out.push_back({"attn.qkv.bias", &Block::qkvB, {3 * w}});
        return out;
    }
    std::vector<BlockTensor> out{{"norm1.weight", &Block::norm1W, {w}}, {"norm2.weight", &Block::norm2W, {w}}};
    if (!qwen25_)
        out.insert(out.end(), {{"norm1.bias", &Block::norm1B, {w}}, {"norm2.bias", &Block::norm2B, {w}}});
    out.insert(out.end(),
               {{"attn.qkv.weight", &Block::qkvW, {3 * w, w}},
                {"attn.qkv.bias", &Block::qkvB, {3 * w}},
                {"attn.proj.weight", &Block::projW, {w, w}},
                {"attn.proj.bias", &Block::projB, {w}}});
    if (qwen25_) {
        out.insert(out.end(),
                   {{"mlp.gate_proj.weight", &Block::gateW, {h, w}},
                    {"mlp.gate_proj.bias", &Block::gateB, {h}},
                    {"mlp.up_proj.weight", &Block::upW, {h, w}},
                    {"mlp.up_proj.bias", &Block::upB, {h}},
                    {"mlp.down_proj.weight", &Block::downW, {w, h}},
                    {"mlp.down_proj.bias", &Block::downB, {w}}});
        return out;
    }
    const bool qwen3 = hasQwen3Vision(arch_);
    const std::string fc1 = qwen3 ? "mlp.linear_fc1." : "mlp.fc1.", fc2 = qwen3 ? "mlp.linear_fc2." : "mlp.fc2.";
    out.insert(out.end(),
               {{fc1 + "weight", &Block::fc1W, {h, w}},
                {fc1 + "bias", &Block::fc1B, {h}},
                {fc2 + "weight", &Block::fc2W, {w, h}},
                {fc2 + "bias", &Block::fc2B, {w}}});
    return out;
}

std::vector<VisionTower::NamedWeight> VisionTower::weights()
{
    if (siglip_ || gemma4_ || gemma3_) // q, k and v fused at load (Gemma 4: a tower of its own): no names to save under
        throw ModelError(std::string(architectureName(arch_)) + "'s vision tower cannot be trained or saved by RopeScope");
    const int64_t w = cfg_.width;
    std::vector<NamedWeight> out{{kPatchWeight, &patchW_, {w, cfg_.inChannels, cfg_.temporalPatch, cfg_.patchSize, cfg_.patchSize}}};
    auto add = [&](const std::string& name, torch::Tensor& t) {
        if (t.defined())
            out.push_back({name, &t, t.sizes().vec()});
    };
    add(kPatchBias, patchB_);
    if (!glm_)
        add(kPositionTable, positionTable_);
    const std::vector<BlockTensor> table = blockTensors();
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const std::string p = "visual.blocks." + std::to_string(i) + ".";
        for (const BlockTensor& bt : table)
            add(p + bt.name, blocks_[i].*bt.member);
    }
    if (glm_)
        for (const GlmTensor& g : glmTensors())
            add(g.name, g.member ? glmHead_.*g.member : positionTable_);
    std::vector<Merger*> mergers;
    if (!glm_)
        mergers.push_back(&merger_);
    for (Merger& d : deepstackMergers_)
        mergers.push_back(&d);
    for (Merger* m : mergers)
        for (const MergerTensor& mt : mergerTensors(m->normAfterMerge))
            add(m->prefix + mt.name, m->*mt.member);
    return out;
}

torch::Tensor VisionTower::norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) const
{
    if (!qwen25_ && !glm_)
        return torch::layer_norm(x, {x.size(-1)}, w, b, siglip_ || gemma3_ ? cfg_.normEps : 1e-6);
    const auto xf = x.to(torch::kFloat32); // RMSNorm: Qwen2.5-VL's eps 1e-6, GLM-V's from its config
    return w * (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + (glm_ ? cfg_.normEps : 1e-6))).to(x.scalar_type());
}

torch::Tensor VisionTower::mlp(const Block& b, const torch::Tensor& x) const
{
    if (glm_)
        return dense(activation(dense(x, b.gateW, b.gateB), cfg_.act) * dense(x, b.upW, b.upB), b.downW, b.downB);
    if (!qwen25_)
        return dense(activation(dense(x, b.fc1W, b.fc1B), cfg_.act), b.fc2W, b.fc2B);
    return dense(torch::silu(dense(x, b.gateW, b.gateB)) * dense(x, b.upW, b.upB), b.downW, b.downB);
}

std::vector<VisionTower::BlockGroup> VisionTower::groupBlocks(const std::vector<int64_t>& boundaries, int64_t tokens) const
{
    std::map<int64_t, std::vector<int64_t>> startsByLength;
    for (size_t i = 1; i < boundaries.size(); ++i)
        if (boundaries[i] > boundaries[i - 1])
            startsByLength[boundaries[i] - boundaries[i - 1]].push_back(boundaries[i - 1]);
    std::vector<BlockGroup> groups;
    for (const auto& [length, starts] : startsByLength) {
        BlockGroup g;
        g.length = length;
        g.count = static_cast<int64_t>(starts.size());
        const auto first = torch::tensor(starts, torch::kInt64).unsqueeze(1);
        g.tokens = (first + torch::arange(length, torch::kInt64).unsqueeze(0)).flatten().to(device_);
        g.wholeSequence = startsByLength.size() == 1 && boundaries.front() == 0 && g.count * length == tokens;
        groups.push_back(std::move(g));
    }
    return groups;
}

torch::Tensor VisionTower::attend(const Block& b, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                  const std::vector<BlockGroup>& groups) const
{
    const int64_t n = x.size(0), heads = cfg_.heads;
    const auto qkv = dense(x, b.qkvW, b.qkvB).reshape({n, 3, heads, -1}).permute({1, 2, 0, 3}); // [3, H, N, d]
    const auto q = cos.defined() ? kernels::applyRotary(qkv[0], cos, sin) : qkv[0];
    const auto k = cos.defined() ? kernels::applyRotary(qkv[1], cos, sin) : qkv[1];
    return dense(attendGroups(q, k, qkv[2], groups), b.projW, b.projB);
}

torch::Tensor VisionTower::attendGroups(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                        const std::vector<BlockGroup>& groups) const
{
    const int64_t heads = q.size(0), n = q.size(1);
    torch::Tensor context;
    for (const BlockGroup& g : groups) {
        // [H, N, d] -> the group's blocks as a batch of heads [count * H, length, d], block-major.
        auto gather = [&](const torch::Tensor& t) {
            const auto rows = g.wholeSequence ? t : t.index_select(1, g.tokens);
            return rows.reshape({heads, g.count, g.length, -1}).transpose(0, 1).reshape({g.count * heads, g.length, -1});
        };
        const BlasOnAllCores cores(kernels::attentionPath() == kernels::AttentionPath::Explicit && // as the decoder's
                                   gemmOverCores(q, 2 * g.count * heads * g.length * g.length * q.size(2)));
        const auto ctx = kernels::attention(gather(q), gather(k), gather(v), kernels::Masking{})
                             .reshape({g.count, heads, g.length, -1})
                             .permute({0, 2, 1, 3})
                             .reshape({g.count * g.length, -1}); // [tokens of the group, H * d]
        if (g.wholeSequence)
            context = ctx;
        else
            context = (context.defined() ? context : torch::zeros({n, ctx.size(1)}, ctx.options())).index_copy(0, g.tokens, ctx);
    }
    return context;
}

std::vector<int64_t> VisionTower::frameBoundaries(const std::vector<int64_t>& grids)
{
    std::vector<int64_t> out{0};
    for (size_t i = 0; i + 2 < grids.size(); i += 3)
        for (int64_t f = 0; f < grids[i]; ++f)
            out.push_back(out.back() + grids[i + 1] * grids[i + 2]);
    return out;
}

torch::Tensor VisionTower::patchCoordinates(const std::vector<int64_t>& grids) const
{
    const int64_t m = cfg_.mergeSize;
    std::vector<torch::Tensor> ids;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        if (siglip_) { // PaddleOCR-VL: raster order
            ids.push_back(torch::stack({torch::arange(h * w).div(w, "floor"), torch::arange(h * w).remainder(w)}, -1).repeat({t, 1}));
            continue;
        }
        // Positions in merge-window-major order: the order the processor flattens patches in.
        auto hpos = torch::arange(h).unsqueeze(1).expand({h, w}).reshape({h / m, m, w / m, m}).permute({0, 2, 1, 3}).flatten();
        auto wpos = torch::arange(w).unsqueeze(0).expand({h, w}).reshape({h / m, m, w / m, m}).permute({0, 2, 1, 3}).flatten();
        ids.push_back(torch::stack({hpos, wpos}, -1).repeat({t, 1}));
    }
    return torch::cat(ids, 0).to(device_);
}

torch::Tensor VisionTower::rotaryFreqs(const torch::Tensor& gridThw) const
{
    const auto grids = toVector(gridThw);
    int64_t maxGrid = 1;
    for (size_t i = 0; i + 2 < grids.size(); i += 3)
        maxGrid = std::max({maxGrid, grids[i + 1], grids[i + 2]});
    const auto pos = patchCoordinates(grids);
    const auto inv = kernels::inverseFrequencies(10000.0, cfg_.headDim() / 2).to(device_);
    const auto full = torch::outer(torch::arange(maxGrid, torch::TensorOptions().dtype(torch::kFloat32).device(device_)), inv);
    return full.index_select(0, pos.flatten()).reshape({pos.size(0), -1}); // [N, 2 * d/4] = (h angles, w angles)
}

torch::Tensor VisionTower::learnedPositions(const std::vector<int64_t>& grids) const
{
    // The side x side table resampled bilinearly (align_corners) to each image's h x w patch grid, then
    // put in merge-window order like the patches. The corner sum runs in Hugging Face's order so the
    // float32 rounding is the same.
    const int64_t side = cfg_.positionGridSide(), m = cfg_.mergeSize;
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    std::vector<torch::Tensor> parts;
    for (size_t i = 0; i + 2 < grids.size(); i += 3) {
        const int64_t t = grids[i], h = grids[i + 1], w = grids[i + 2];
        const auto hs = torch::linspace(0, static_cast<double>(side - 1), h, f32),
                   ws = torch::linspace(0, static_cast<double>(side - 1), w, f32);
        const auto h0 = hs.to(torch::kInt64), w0 = ws.to(torch::kInt64);
        const auto h1 = (h0 + 1).clamp_max(side - 1), w1 = (w0 + 1).clamp_max(side - 1);
        const auto dh = (hs - h0).unsqueeze(1), dw = (ws - w0).unsqueeze(0);
        auto corner = [&](const torch::Tensor& hi, const torch::Tensor& wi, const torch::Tensor& weight) {
            const auto index = (hi.unsqueeze(1) * side + wi.unsqueeze(0)).flatten().to(device_);
            return positionTable_.index_select(0, index) * weight.flatten().unsqueeze(1).to(device_, positionTable_.scalar_type());
        };
        auto grid =
            corner(h0, w0, (1 - dh) * (1 - dw)) + corner(h0, w1, (1 - dh) * dw) + corner(h1, w0, dh * (1 - dw)) + corner(h1, w1, dh * dw);
        grid = grid.repeat({t, 1}).view({t, h / m, m, w / m, m, -1}).permute({0, 1, 3, 2, 4, 5}).reshape({t * h * w, -1});
        parts.push_back(grid);
    }
    return torch::cat(parts, 0);
}

torch::Tensor VisionTower::merge(const Merger& merger, const torch::Tensor& x) const
{
    const int64_t wide = cfg_.width * cfg_.mergeSize * cfg_.mergeSize;
    const auto rows = merger.normAfterMerge ? norm(x.reshape({-1, wide}), merger.normW, merger.normB)
                                            : norm(x, merger.normW, merger.normB).reshape({-1, wide});
    return dense(torch::gelu(dense(rows, merger.fc1W, merger.fc1B)), merger.fc2W, merger.fc2B);
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

VisionFeatures VisionTower::forward(const torch::Tensor& given, const torch::Tensor& gridThw, VisionTrace* trace) const
{
    // PaddleOCR-VL's processor hands patches as [N, C, P, P]: the same values, flattened.
    const auto pixels =
        given.dim() == 4 && given.size(1) * given.size(2) * given.size(3) == cfg_.patchDim() && !isGemma(arch_) ? given.flatten(1) : given;
    if (pixels.dim() != 2 || pixels.size(1) != cfg_.patchDim())
        throw ModelError("pixel_values: expected [N, " + std::to_string(cfg_.patchDim()) + "] patches" +
                         (isGemma(arch_) ? " (Gemma: each image's valid patches, in raster order)" : ""));
    if (isGemma(arch_) && (gridThw.dim() != 2 || gridThw.size(1) != 3 || gridThw.size(0) < 1))
        throw ModelError("image_grid_thw: expected [images, 3]");
    const auto grids = toVector(gridThw);
    if (gemma4_)
        return forwardGemma4(pixels, grids, trace);
    if (gemma3_)
        return forwardGemma3(pixels, grids, trace);
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
        throw ModelError("pixel_values: " + std::to_string(pixels.size(0)) + " patches but image_grid_thw describes " +
                         std::to_string(patches));

    const auto x0 = pixels.to(device_, patchW_.scalar_type());
    VisionFeatures out;
    auto x = dense(x0, patchW_, patchB_); // the Conv3d with stride = kernel is a matmul over flattened patches
    auto freqs = rotaryFreqs(gridThw);
    if (trace) {
        trace->patchEmbeds = x;
        trace->rotaryFreqs = freqs;
        trace->cuSeqlens = torch::tensor(imageBoundaries);
    }
    if (glm_) { // RMSNorm, then the learned table resampled to each grid
        x = norm(x, glmHead_.postConvNormW, {});
        const auto coordinates = patchCoordinates(grids);
        const auto positions = bicubicPositions(coordinates, grids).to(x.scalar_type());
        if (trace) {
            trace->postConvNorm = x;
            trace->positionEmbeds = positions;
            trace->positionH = coordinates.select(1, 0);
            trace->positionW = coordinates.select(1, 1);
        }
        x = x + positions;
        if (trace)
            trace->embeddings = x;
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
    if (siglip_) {
        const auto positions = bilinearPositions(grids).to(x.scalar_type());
        x = x + positions;
        if (trace) {
            trace->positionEmbeds = positions;
            trace->embeddings = x;
        }
    } else if (positionTable_.defined() && !glm_) { // Qwen3-VL's bilinear table (GLM-V added its bicubic one above)
        const auto positions = learnedPositions(grids);
        x = x + positions;
        if (trace)
            trace->positionEmbeds = positions;
    }
    const auto emb = torch::cat({freqs, freqs}, -1);
    // Cast once here rather than in every block's rotation (a bf16 model rotates in bf16, as Hugging Face).
    const auto cos = emb.cos().to(x.scalar_type()), sin = emb.sin().to(x.scalar_type());

    const auto imageGroups = groupBlocks(imageBoundaries, x.size(0));
    const auto windowGroups = qwen25_ ? groupBlocks(windowBoundaries, x.size(0)) : std::vector<BlockGroup>{};
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const Block& b = blocks_[i];
        const bool full = !qwen25_ ||
            std::find(cfg_.fullAttentionBlocks.begin(), cfg_.fullAttentionBlocks.end(), static_cast<int>(i)) !=
                cfg_.fullAttentionBlocks.end();
        x = x + attend(b, norm(x, b.norm1W, b.norm1B), cos, sin, full ? imageGroups : windowGroups);
        x = x + mlp(b, norm(x, b.norm2W, b.norm2B));
        if (trace)
            trace->blockOutputs.push_back(x);
        // Features come out in block order, each through the merger listed at the block's place.
        const auto listed = std::find(cfg_.deepstackBlocks.begin(), cfg_.deepstackBlocks.end(), static_cast<int>(i));
        if (listed != cfg_.deepstackBlocks.end())
            out.deepstack.push_back(merge(deepstackMergers_[static_cast<size_t>(listed - cfg_.deepstackBlocks.begin())], x));
    }
    if (siglip_) {
        x = norm(x, siglipHead_.postNormW, siglipHead_.postNormB);
        if (trace)
            trace->postLayernorm = x;
        out.embeds = siglipProject(x, grids, trace);
        return out;
    }
    out.embeds = glm_ ? glmMerge(x, trace) : merge(merger_, x);
    if (qwen25_)
        out.embeds = out.embeds.index_select(0, torch::argsort(window));
    return out;
}

} // namespace ropescope::model

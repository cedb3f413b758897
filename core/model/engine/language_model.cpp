#include "core/model/engine/language_model.h"

#include "core/model/engine/attention_masks.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/dense.h"
#include "kernels/rotary.h"

#include <torch/types.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <tuple>
#include <vector>

// at::rms_norm (LibTorch 2.4 and later) is one operator, and a fused kernel on CUDA where LibTorch has one.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define ROPESCOPE_AT_RMS_NORM 1
#endif

namespace ropescope::model {
namespace {

// M = U S V^T and its inverse transpose U S^-1 V^T from the stored parameters (U, V orthogonal).
std::pair<torch::Tensor, torch::Tensor> haropeMaps(const torch::Tensor& au, const torch::Tensor& av, const torch::Tensor& sigma)
{
    const auto s = torch::softplus(sigma) + 1e-6;
    const auto u = torch::matrix_exp(au - au.transpose(1, 2));
    const auto v = torch::matrix_exp(av - av.transpose(1, 2));
    return {torch::matmul(u * s.unsqueeze(1), v.transpose(1, 2)), torch::matmul(u / s.unsqueeze(1), v.transpose(1, 2))};
}

} // namespace

std::vector<LanguageModel::LayerTensor> LanguageModel::layerTensors(int layer, bool harope, bool linear, bool sparse) const
{
    if (cfg_.gemmaNorms)
        return gemmaLayerTensors(layer);
    const bool denseMlp = !sparse; // a sparse layer's MLP is its MoeWeights
    const int64_t h = cfg_.hidden, d = cfg_.headDim(), q = cfg_.heads * d, kv = cfg_.kvHeads * d, m = cfg_.intermediate;
    const bool attention = !linear, bias = cfg_.attentionBias && attention, norm = cfg_.qkNorm && attention;
    harope = harope && attention;
    const int64_t qRows = cfg_.attentionOutputGate ? 2 * q : q; // Qwen3.5: query and gate per head
    return {
        {"input_layernorm.weight", &Layer::inNorm, {h}, true},
        {"post_attention_layernorm.weight", &Layer::postNorm, {h}, true},
        {"self_attn.q_proj.weight", &Layer::qW, {qRows, h}, attention},
        {"self_attn.q_proj.bias", &Layer::qB, {q}, bias},
        {"self_attn.k_proj.weight", &Layer::kW, {kv, h}, attention},
        {"self_attn.k_proj.bias", &Layer::kB, {kv}, bias},
        {"self_attn.v_proj.weight", &Layer::vW, {kv, h}, attention},
        {"self_attn.v_proj.bias", &Layer::vB, {kv}, bias},
        {"self_attn.o_proj.weight", &Layer::oW, {h, q}, attention},
        {"self_attn.q_norm.weight", &Layer::qNorm, {d}, norm},
        {"self_attn.k_norm.weight", &Layer::kNorm, {d}, norm},
        {"post_self_attn_layernorm.weight", &Layer::postAttnNorm, {h}, cfg_.sandwichNorms},
        {"post_mlp_layernorm.weight", &Layer::postMlpNorm, {h}, cfg_.sandwichNorms},
        {"mlp.gate_proj.weight", &Layer::gateW, {m, h}, denseMlp && !cfg_.fusedGateUp},
        {"mlp.up_proj.weight", &Layer::upW, {m, h}, denseMlp && !cfg_.fusedGateUp},
        {"mlp.gate_up_proj.weight", &Layer::gateUpW, {2 * m, h}, denseMlp && cfg_.fusedGateUp},
        {"mlp.down_proj.weight", &Layer::downW, {h, m}, denseMlp},
        {"self_attn.harope.a_u", &Layer::haropeAu, {cfg_.heads, d, d}, harope},
        {"self_attn.harope.a_v", &Layer::haropeAv, {cfg_.heads, d, d}, harope},
        {"self_attn.harope.sigma", &Layer::haropeSigma, {cfg_.heads, d}, harope},
    };
}

// Gemma's layer: four norms, q/k norms, per-kind head sizes; a KV-shared layer (E2B / E4B) has no k/v projections or
// norms, a k = v full layer (31B, 26B-A4B) no v_proj; Gemma 4 scales each layer's output by its layer_scalar.
std::vector<LanguageModel::LayerTensor> LanguageModel::gemmaLayerTensors(int layer) const
{
    const LayerKind kind = cfg_.layerKind(layer);
    const int64_t h = cfg_.hidden, d = kind.headDim, q = cfg_.heads * d, kv = kind.kvHeads * d, m = cfg_.mlpWidth(layer);
    const int64_t p = cfg_.perLayerInput;
    const bool own = cfg_.kvSourceLayer(layer)<0, perLayer = p> 0;
    return {
        {"input_layernorm.weight", &Layer::inNorm, {h}, true},
        {"post_attention_layernorm.weight", &Layer::postAttnNorm, {h}, true},
        {"pre_feedforward_layernorm.weight", &Layer::postNorm, {h}, true},
        {"post_feedforward_layernorm.weight", &Layer::postMlpNorm, {h}, true},
        {"self_attn.q_proj.weight", &Layer::qW, {q, h}, true},
        {"self_attn.k_proj.weight", &Layer::kW, {kv, h}, own},
        {"self_attn.v_proj.weight", &Layer::vW, {kv, h}, own && !kind.keyIsValue},
        {"self_attn.o_proj.weight", &Layer::oW, {h, q}, true},
        {"self_attn.q_norm.weight", &Layer::qNorm, {d}, true},
        {"self_attn.k_norm.weight", &Layer::kNorm, {d}, own},
        {"mlp.gate_proj.weight", &Layer::gateW, {m, h}, true},
        {"mlp.up_proj.weight", &Layer::upW, {m, h}, true},
        {"mlp.down_proj.weight", &Layer::downW, {h, m}, true},
        {"layer_scalar", &Layer::layerScalar, {1}, cfg_.layerScalar},
        {"per_layer_input_gate.weight", &Layer::perLayerGateW, {p, h}, perLayer},
        {"per_layer_projection.weight", &Layer::perLayerProjectionW, {h, p}, perLayer},
        {"post_per_layer_input_norm.weight", &Layer::perLayerNorm, {h}, perLayer},
        {"pre_feedforward_layernorm_2.weight", &Layer::moePreNorm, {h}, cfg_.moe.isSparse(layer)},
        {"post_feedforward_layernorm_1.weight", &Layer::moeDenseNorm, {h}, cfg_.moe.isSparse(layer)},
        {"post_feedforward_layernorm_2.weight", &Layer::moeExpertsNorm, {h}, cfg_.moe.isSparse(layer)},
    };
}

std::vector<LanguageModel::DeltaNetTensor> LanguageModel::deltaNetTensors() const
{
    const int64_t h = cfg_.hidden, hv = cfg_.linearValueHeads, dv = cfg_.linearValueDim;
    const int64_t channels = 2 * cfg_.linearKeyHeads * cfg_.linearKeyDim + hv * dv;
    return {
        {"linear_attn.in_proj_qkv.weight", &DeltaNetWeights::qkvW, {channels, h}},
        {"linear_attn.in_proj_z.weight", &DeltaNetWeights::zW, {hv * dv, h}},
        {"linear_attn.in_proj_b.weight", &DeltaNetWeights::bW, {hv, h}},
        {"linear_attn.in_proj_a.weight", &DeltaNetWeights::aW, {hv, h}},
        {"linear_attn.conv1d.weight", &DeltaNetWeights::convW, {channels, 1, cfg_.convKernel}},
        {"linear_attn.A_log", &DeltaNetWeights::aLog, {hv}},
        {"linear_attn.dt_bias", &DeltaNetWeights::dtBias, {hv}},
        {"linear_attn.norm.weight", &DeltaNetWeights::normW, {dv}},
        {"linear_attn.out_proj.weight", &DeltaNetWeights::outW, {h, hv * dv}},
    };
}

namespace {

// Checkpoint names of the decoder's own tensors (its layers have the table above).
const char* const kEmbedding = "model.embed_tokens.weight";
const char* const kFinalNorm = "model.norm.weight";
const char* const kLmHead = "lm_head.weight";
// Gemma E2B / E4B: the per-layer inputs' table, the embeddings' projection to them and its norm.
const char* const kPerLayerEmbedding = "model.embed_tokens_per_layer.weight";
const char* const kPerLayerProjection = "model.per_layer_model_projection.weight";
const char* const kPerLayerNorm = "model.per_layer_projection_norm.weight";

} // namespace

LanguageModel::LanguageModel(const Checkpoint& ck, torch::Device device, torch::Dtype dtype) : cfg_(ck.config().text), device_(device)
{
    const int64_t h = cfg_.hidden;
    auto t = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(device, dtype); };
    embedding_ = t(kEmbedding, {cfg_.vocab, h});
    finalNorm_ = t(kFinalNorm, {h});
    // An untied model's head is its own tensor: a checkpoint without it would silently run the embeddings as
    // the head, which is another model.
    if (!cfg_.tieEmbeddings && !ck.has(kLmHead))
        throw BadInputFile(ck.dir().toStdString() + ": missing tensor 'lm_head.weight' (config.json says tie_word_embeddings false)");
    lmHead_ = cfg_.tieEmbeddings ? embedding_ : t(kLmHead, {cfg_.vocab, h});
    const auto moeWorkspace = cfg_.moe.any() ? makeMoeWorkspace() : nullptr; // the sparse layers' one, freed with them
    for (int i = 0; i < cfg_.layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        Layer l;
        l.linear = cfg_.isLinear(i);
        for (const LayerTensor& lt : layerTensors(i, ck.config().harope, l.linear, cfg_.moe.isSparse(i)))
            if (lt.present)
                l.*lt.member = t(p + lt.name, lt.shape);
        l.kind = cfg_.layerKind(i);
        l.kvSource = cfg_.kvSourceLayer(i);
        if (cfg_.moe.isSparse(i)) {
            l.moe = loadMoeWeights(ck, cfg_.gemmaNorms ? p : p + "mlp.", cfg_, device, dtype); // Gemma: layers.{i}.router, .experts
            l.moe.workspace = moeWorkspace;
        }
        if (l.linear)
            for (const DeltaNetTensor& dt : deltaNetTensors())
                l.deltaNet.*dt.member = t(p + dt.name, dt.shape);
        if (l.haropeAu.defined())
            std::tie(l.haropeM, l.haropeMInvT) = haropeMaps(l.haropeAu, l.haropeAv, l.haropeSigma);
        layers_.push_back(std::move(l));
    }
    if (cfg_.pairing == geometry::RotaryPairing::Adjacent)
        permuteToHalfSplit();
    if (cfg_.perLayerInput > 0) {
        const int64_t width = int64_t(cfg_.layers) * cfg_.perLayerInput;
        perLayerEmbedding_ = t(kPerLayerEmbedding, {cfg_.perLayerVocab, width});
        perLayerModelProjection_ = t(kPerLayerProjection, {width, h});
        perLayerProjectionNorm_ = t(kPerLayerNorm, {cfg_.perLayerInput});
    }
}

void LanguageModel::permuteToHalfSplit()
{
    // Pair (2j, 2j+1) of each head moves to (j, j + r/2): the rows of q_proj and k_proj (and their biases)
    // are reordered once, so the half-split rotation turns each pair at no cost per pass; permuting q and k per
    // layer, or rotating the pairs in place, measured slower (docs/SPEED.md, "Engine choices measured on the CPU").
    const int64_t r = cfg_.rotaryDim(), d = cfg_.headDim();
    pairOrder_ = torch::cat({torch::arange(0, r, 2), torch::arange(1, r, 2), torch::arange(r, d)}).to(device_);
    auto rows = [&](torch::Tensor& t, int64_t heads) {
        if (t.defined())
            t = t.view({heads, d, -1}).index_select(1, pairOrder_).reshape(t.sizes()).contiguous();
    };
    for (Layer& l : layers_) {
        rows(l.qW, cfg_.heads);
        rows(l.qB, cfg_.heads);
        rows(l.kW, cfg_.kvHeads);
        rows(l.kB, cfg_.kvHeads);
    }
}

std::vector<std::pair<std::string, torch::Tensor*>> LanguageModel::weights()
{
    if (pairOrder_.defined()) // q_proj and k_proj are held reordered (adjacent pairs), not as the checkpoint stores them
        throw ModelError("a decoder with adjacent rotary pairs (GLM-V) cannot be trained or saved by RopeScope");
    if (cfg_.moe.any()) // the experts are held joined or as views of fused tensors, not as the checkpoint names them
        throw ModelError("a mixture-of-experts decoder cannot be trained or saved by RopeScope");
    if (cfg_.gemmaNorms) // its vision tower and per-layer tables are not among the trainer's weights
        throw ModelError("a Gemma decoder cannot be trained or saved by RopeScope");
    std::vector<std::pair<std::string, torch::Tensor*>> out{{kEmbedding, &embedding_}, {kFinalNorm, &finalNorm_}};
    if (!lmHead_.is_same(embedding_))
        out.push_back({kLmHead, &lmHead_});
    for (size_t i = 0; i < layers_.size(); ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        // whatever a layer holds (HARoPE maps added later too)
        for (const LayerTensor& lt : layerTensors(static_cast<int>(i), true, layers_[i].linear, false))
            if ((layers_[i].*lt.member).defined())
                out.push_back({p + lt.name, &(layers_[i].*lt.member)});
        if (layers_[i].linear)
            for (const DeltaNetTensor& dt : deltaNetTensors())
                out.push_back({p + dt.name, &(layers_[i].deltaNet.*dt.member)});
    }
    return out;
}

void LanguageModel::addIdentityHarope()
{
    const int64_t d = cfg_.headDim();
    const auto options = embedding_.options();
    for (Layer& l : layers_) {
        if (l.haropeAu.defined() || l.linear)
            continue;
        l.haropeAu = torch::zeros({cfg_.heads, d, d}, options);
        l.haropeAv = torch::zeros({cfg_.heads, d, d}, options);
        l.haropeSigma = torch::full({cfg_.heads, d}, std::log(std::expm1(1.0 - 1e-6)), options); // softplus^-1(1 - 1e-6): S = I
        std::tie(l.haropeM, l.haropeMInvT) = haropeMaps(l.haropeAu, l.haropeAv, l.haropeSigma);
    }
}

LayerRotary rotaryForTable(const geometry::PositionTable& table, const TextConfig& text, torch::Device device, int64_t from, int64_t count,
                           double offset)
{
    return rotaryForTable(table, text, text.layerKind(0), device, from, count, offset);
}

namespace {

// A kind's inverse frequencies at `theta` over the pairs the tables cover: the rotated dims' (partial rotary: the
// tables cover those only), or, proportional, the rotated pairs' frequencies over the whole head then zeros.
torch::Tensor kindFrequencies(const LayerKind& kind, double theta, torch::Device device)
{
    auto inv = kind.proportional ? torch::cat({kernels::inverseFrequencies(theta, kind.headDim).narrow(0, 0, kind.rotaryDim() / 2),
                                               torch::zeros({kind.tablePairs() - kind.rotaryDim() / 2}, torch::kFloat32)})
                                 : kernels::inverseFrequencies(theta, kind.rotaryDim());
    if (kind.linearFactor != 1.0)
        inv = inv / kind.linearFactor;
    return inv.to(device);
}

} // namespace

LayerRotary rotaryForTable(const geometry::PositionTable& table, const TextConfig& text, const LayerKind& kind, torch::Device device,
                           int64_t from, int64_t count, double offset)
{
    // The pairs the position components drive; a proportional kind's other pairs (frequency 0) take component 0.
    const int64_t half = kind.rotaryDim() / 2, pairs = kind.tablePairs();
    if (table.size() == 0) // decoding continues the table at its maximum, which an empty table does not have
        throw ModelError("rotary: the position table holds no tokens (an empty prompt)");
    if (from < 0 || count < 0 || (from < table.size() && from + count > table.size()))
        throw ModelError("rotary: rows " + std::to_string(from) + "+" + std::to_string(count) + " outside the table's " +
                         std::to_string(table.size()));
    torch::Tensor positions;
    if (from < table.size()) {
        positions = torch::from_blob(const_cast<double*>(table.positions.data()), {table.components(), table.size()}, torch::kFloat64)
                        .t()
                        .narrow(0, from, count)
                        .to(torch::kFloat32)
                        .to(device);
    } else {
        // Decoding: each layer continues its own table at max + 1 (+ the tokens generated so far).
        positions = torch::full({count, table.components()}, table.positions.maxCoeff() + 1 + offset,
                                torch::TensorOptions().dtype(torch::kFloat32).device(device));
    }
    const geometry::FrequencyAllocation& allocation = table.allocation;
    // XD-RoPE: every pair at the NTK-alpha base (thetaScale 1 for the other schemes).
    const double theta = kind.theta * allocation.thetaScale;
    const auto inv = kindFrequencies(kind, theta, device);
    // VideoRoPE++: the time axis' pairs at the NTK-scaled base.
    const auto invTime = allocation.temporalThetaScale != 1.0 ? kindFrequencies(kind, theta * allocation.temporalThetaScale, device) : inv;
    if (!allocation.perHead()) {
        auto component = allocation.componentTable(static_cast<int>(half));
        component.resize(static_cast<size_t>(pairs), 0);
        const auto comp = torch::tensor(std::vector<int64_t>(component.begin(), component.end()), torch::kInt64).to(device);
        auto [cos, sin] = kernels::rotaryTables(positions, torch::where(comp == 0, invTime, inv), comp);
        return {cos, sin};
    }
    // MHRoPE: each head turns all its pairs by one axis (or not at all): tables [heads, L, d], over the KV heads
    // or, for a model with too few of them, over the query heads (the decoder then repeats k per query head).
    const int64_t heads = table.rotary.heads;
    if (heads != kind.kvHeads && heads != text.heads)
        throw ModelError("per-head allocation: spreads its axes over " + std::to_string(heads) + " heads, but the layer has " +
                         std::to_string(kind.kvHeads) + " KV heads and " + std::to_string(text.heads) + " query heads");
    // One table per axis (index c + 1; 0 = no rotary), shared by the heads on it.
    std::vector<std::pair<torch::Tensor, torch::Tensor>> perAxis(static_cast<size_t>(table.components()) + 1);
    std::vector<torch::Tensor> cosPerHead, sinPerHead;
    for (int c : allocation.headComponents(static_cast<int>(heads))) {
        auto& [cos, sin] = perAxis[static_cast<size_t>(c + 1)];
        if (!cos.defined() && c < 0) {
            cos = torch::ones({count, 2 * pairs}, positions.options());
            sin = torch::zeros({count, 2 * pairs}, positions.options());
        } else if (!cos.defined()) {
            const auto comp = torch::full({pairs}, c, torch::TensorOptions().dtype(torch::kInt64).device(device));
            std::tie(cos, sin) = kernels::rotaryTables(positions, c == 0 ? invTime : inv, comp);
        }
        cosPerHead.push_back(cos);
        sinPerHead.push_back(sin);
    }
    return {torch::stack(cosPerHead), torch::stack(sinPerHead)};
}

torch::Tensor LanguageModel::embed(const torch::Tensor& ids) const
{
    if ((ids < 0).any().item<bool>() || (ids >= cfg_.vocab).any().item<bool>())
        throw ModelError("input_ids: ids must be in [0, " + std::to_string(cfg_.vocab) + ")");
    return embedInRange(ids.to(device_));
}

torch::Tensor LanguageModel::embedInRange(const torch::Tensor& ids) const
{
    const auto rows = embedding_.index_select(0, ids);
    return cfg_.scaledEmbeddings ? rows * embeddingScale() : rows;
}

torch::Tensor LanguageModel::embeddingScale() const
{
    // transformers keeps sqrt(hidden) as a float32 scalar and casts it to the weights' dtype (bf16 rounds it).
    return torch::scalar_tensor(std::sqrt(static_cast<double>(cfg_.hidden)), torch::kFloat32).to(embedding_.options());
}

torch::Tensor LanguageModel::perLayerInputs(const torch::Tensor& ids, const torch::Tensor& embeds) const
{
    const int64_t width = cfg_.perLayerInput;
    auto sizes = embeds.sizes().vec(); // [.., L, hidden] -> [.., L, layers, width]
    sizes.back() = cfg_.layers;
    sizes.push_back(width);
    const auto scale = torch::scalar_tensor(std::sqrt(static_cast<double>(width)), torch::kFloat32).to(embeds.options());
    const auto own = (perLayerEmbedding_.index_select(0, ids.flatten()) * scale).view(sizes);
    const auto projected = dense(embeds, perLayerModelProjection_) * (1.0 / std::sqrt(static_cast<double>(cfg_.hidden)));
    return (rmsNorm(projected.view(sizes), perLayerProjectionNorm_) + own) * std::pow(2.0, -0.5);
}

void KvCache::makeFixed(int64_t capacity)
{
    if (fixed())
        return;
    for (std::vector<torch::Tensor>* buffers : {&keys, &values})
        for (torch::Tensor& t : *buffers) {
            if (!t.defined()) // a DeltaNet layer
                continue;
            auto sizes = t.sizes().vec(); // [1, heads, tokens, d]
            sizes[2] = capacity;
            auto fixedBuffer = torch::zeros(sizes, t.options());
            fixedBuffer.narrow(2, 0, t.size(2)).copy_(t);
            t = fixedBuffer;
        }
    torch::Device device = torch::kCPU;
    for (const torch::Tensor& t : keys)
        if (t.defined())
            device = t.device();
    slots = torch::arange(capacity, torch::TensorOptions().dtype(torch::kInt64).device(device));
    slot = torch::full({1}, tokens, slots.options());
}

torch::Tensor LanguageModel::rmsNorm(const torch::Tensor& x, const torch::Tensor& w) const
{
    if (cfg_.gemmaNorms) { // in float32, the weight too (Gemma 3: 1 + w; Gemma 4's v_norm and router norm: none)
        const auto xf = x.to(torch::kFloat32);
        auto normed = xf * torch::pow(xf.pow(2).mean(-1, true) + cfg_.rmsEps, -0.5);
        if (w.defined())
            normed = normed * (cfg_.zeroCentredNorm ? 1.0 + w.to(torch::kFloat32) : w.to(torch::kFloat32));
        return normed.to(x.scalar_type());
    }
#ifdef ROPESCOPE_AT_RMS_NORM
    // The same float32 statistics in the same order as the manual form (normalise, cast to x's dtype, then weight), in one
    // operator instead of eight: a decoder layer has four norms, and on a GPU each operator is a launch.
    if (cfg_.zeroCentredNorm)
        return at::rms_norm(x.to(torch::kFloat32), {x.size(-1)}, 1.0 + w.to(torch::kFloat32), cfg_.rmsEps).to(x.scalar_type());
    return at::rms_norm(x, {x.size(-1)}, w, cfg_.rmsEps);
#else
    const auto xf = x.to(torch::kFloat32);
    const auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + cfg_.rmsEps);
    if (cfg_.zeroCentredNorm) // Qwen3.5 stores w - 1: scale by 1 + w, in float32
        return (normed * (1.0 + w.to(torch::kFloat32))).to(x.scalar_type());
    return w * normed.to(x.scalar_type());
#endif
}

torch::Tensor LanguageModel::mlp(const Layer& l, const torch::Tensor& x, RouterTrace* router) const
{
    if (l.moe.defined() && !cfg_.gemmaNorms)
        return moeForward(x, l.moe, cfg_.moe, router);
    if (cfg_.geluMlp)
        return dense(torch::gelu(dense(x, l.gateW), "tanh") * dense(x, l.upW), l.downW);
    if (!l.gateUpW.defined())
        return dense(torch::silu(dense(x, l.gateW)) * dense(x, l.upW), l.downW);
    const auto both = dense(x, l.gateUpW); // one GEMM: the first half is the gate, the second up
    const int64_t m = cfg_.intermediate;
    return dense(torch::silu(both.narrow(-1, 0, m)) * both.narrow(-1, m, m), l.downW);
}

torch::Tensor LanguageModel::gemmaMixture(const Layer& l, const torch::Tensor& x, RouterTrace* router) const
{
    const auto dense = rmsNorm(mlp(l, rmsNorm(x, l.postNorm), nullptr), l.moeDenseNorm);
    const auto experts = moeForward(rmsNorm(x, l.moePreNorm), l.moe, cfg_.moe, router, x);
    return dense + rmsNorm(experts, l.moeExpertsNorm);
}

struct LanguageModel::Pass {
    KvCache* cache;
    const DecoderCapture& capture;
    kernels::CaptureSelection selection;
    std::vector<kernels::Masking> masking; // per kind of layer (TextConfig::kindIndex)
    bool single;
    DecoderOutput& out;
    // Gemma E2B / E4B without a cache: each layer's keys and values of this pass, for the layers that share them.
    std::vector<std::pair<torch::Tensor, torch::Tensor>> passKv;
};

std::pair<torch::Tensor, torch::Tensor> LanguageModel::cachedKeysValues(const Layer& l, size_t i, torch::Tensor k, torch::Tensor v,
                                                                        Pass& pass) const
{
    KvCache* cache = pass.cache;
    if (l.kvSource >= 0) { // the source layer ran earlier in this pass and holds the sequence so far
        const size_t source = static_cast<size_t>(l.kvSource);
        return cache ? std::make_pair(cache->keys[source], cache->values[source]) : pass.passKv[source];
    }
    if (cache && cache->fixed()) {
        cache->keys[i].index_copy_(2, cache->slot, k);
        cache->values[i].index_copy_(2, cache->slot, v);
        k = cache->keys[i];
        v = cache->values[i];
    } else if (cache) {
        if (cache->keys[i].defined()) {
            k = torch::cat({cache->keys[i], k}, 2);
            v = torch::cat({cache->values[i], v}, 2);
        }
        cache->keys[i] = k;
        cache->values[i] = v;
    }
    if (cfg_.kvSharedLayers > 0 && !cache)
        pass.passKv[i] = {k, v};
    return {k, v};
}

torch::Tensor LanguageModel::attend(const Layer& l, size_t i, const torch::Tensor& hn, const LayerRotary& r, Pass& pass) const
{
    const int64_t batch = hn.size(0), n = hn.size(1), d = l.kind.headDim, heads = cfg_.heads, kvHeads = l.kind.kvHeads;
    auto q = dense(hn, l.qW, l.qB);
    torch::Tensor gate;
    if (cfg_.attentionOutputGate) { // per head: the query's d values, then the gate's
        const auto both = q.view({batch, n, heads, 2 * d});
        gate = both.narrow(-1, d, d).reshape({batch, n, heads * d});
        q = both.narrow(-1, 0, d);
    }
    q = q.reshape({batch, n, heads, d}).transpose(1, 2); // [B, H, n, d]
    const bool ownKv = l.kvSource < 0;
    torch::Tensor k, v;
    if (ownKv) {
        const auto kProjected = dense(hn, l.kW, l.kB).reshape({batch, n, kvHeads, d}).transpose(1, 2);
        k = kProjected;
        // Gemma 4's k = v layers: V is k_proj's output before its norm and rotary.
        v = l.kind.keyIsValue ? kProjected : dense(hn, l.vW, l.vB).reshape({batch, n, kvHeads, d}).transpose(1, 2);
        if (cfg_.valueNorm)
            v = rmsNorm(v, {});
    }
    if (l.qNorm.defined()) {
        q = rmsNorm(q, l.qNorm);
        if (ownKv)
            k = rmsNorm(k, l.kNorm);
    }
    if (l.haropeM.defined()) {
        // While the maps train they are rebuilt from their parameters each step; otherwise the cached ones.
        const auto [m, mInvT] =
            l.haropeAu.requires_grad() ? haropeMaps(l.haropeAu, l.haropeAv, l.haropeSigma) : std::make_pair(l.haropeM, l.haropeMInvT);
        q = torch::matmul(q, m.transpose(1, 2));                                           // q' = M q
        k = torch::matmul(k.repeat_interleave(heads / kvHeads, 1), mInvT.transpose(1, 2)); // per query head
        v = v.repeat_interleave(heads / kvHeads, 1);
    }
    const auto cos = r.cos.to(q.scalar_type()), sin = r.sin.to(q.scalar_type()); // once for q and k
    if (ownKv && cos.dim() == 3 && cos.size(0) == heads && k.size(1) != heads) {
        // Per-query-head rotary (MHRoPE on a model with few KV heads): each query head gets its own keys.
        k = k.repeat_interleave(heads / kvHeads, 1);
        v = v.repeat_interleave(heads / kvHeads, 1);
    }
    const DecoderCapture& capture = pass.capture;
    const bool keep = std::find(capture.layers.begin(), capture.layers.end(), static_cast<int>(i)) != capture.layers.end();
    if (keep && capture.meanQueryKey) {
        const auto keys = ownKv ? k : q.narrow(1, 0, 0); // a KV-shared layer has no keys of its own
        pass.out.meanQueries.push_back(pass.single ? q.mean(2).squeeze(0) : q.mean(2));
        pass.out.meanKeys.push_back(pass.single ? keys.mean(2).squeeze(0) : keys.mean(2));
    }
    // Per-KV-head tables serve each group of query heads (and keys repeated per query head).
    auto forHeads = [](const torch::Tensor& t, int64_t headCount) {
        return t.dim() == 3 && t.size(0) != headCount ? t.repeat_interleave(headCount / t.size(0), 0) : t;
    };
    q = kernels::applyRotary(q, forHeads(cos, heads), forHeads(sin, heads));
    if (ownKv)
        k = kernels::applyRotary(k, forHeads(cos, k.size(1)), forHeads(sin, k.size(1)));
    std::tie(k, v) = cachedKeysValues(l, i, k, v, pass);
    if (cfg_.attentionScale > 0) // the kernel scales by 1 / sqrt(d): Gemma's own scale instead
        q = q * (cfg_.attentionScale * std::sqrt(static_cast<double>(d)));
    torch::Tensor probs;
    // The explicit path's score and context products are GEMMs made here (the fused path's run inside its own
    // parallel region): on every core.
    const BlasOnAllCores cores(kernels::attentionPath() == kernels::AttentionPath::Explicit &&
                               gemmOverCores(q, 2 * q.size(0) * heads * n * k.size(2) * d));
    // Batch folded into heads (batch-major), so grouped-query repetition stays within a sample.
    const auto ctx = kernels::attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1),
                                        pass.masking[static_cast<size_t>(cfg_.kindIndex(static_cast<int>(i)))],
                                        keep ? &pass.selection : nullptr, keep ? &probs : nullptr);
    if (keep)
        pass.out.attentions.push_back(pass.single ? probs : probs.view({batch, heads, probs.size(1), probs.size(2)}));
    if (keep && capture.contexts) {
        const auto vFlat = v.flatten(0, 1);
        pass.out.contexts.push_back(ctx);
        pass.out.values.push_back(vFlat.size(0) == ctx.size(0) ? vFlat : vFlat.repeat_interleave(ctx.size(0) / vFlat.size(0), 0));
    }
    auto attn = ctx.view({batch, heads, n, d}).transpose(1, 2).reshape({batch, n, heads * d});
    if (gate.defined())
        attn = attn * torch::sigmoid(gate);
    return dense(attn, l.oW);
}

torch::Tensor LanguageModel::decoderLayer(const Layer& l, size_t i, const torch::Tensor& x0, const LayerRotary& r, Pass& pass,
                                          const torch::Tensor& perLayerInput) const
{
    const auto hn = rmsNorm(x0, l.inNorm);
    auto x = x0;
    if (l.linear) {
        DeltaNetState local;
        DeltaNetState* state = pass.cache ? &pass.cache->deltaNet[i] : &local;
        DeltaNetTrace trace;
        x = x + gatedDeltaNet(hn, l.deltaNet, cfg_, state, pass.capture.deltaNet ? &trace : nullptr);
        if (pass.capture.deltaNet) {
            pass.out.deltaTraces.push_back(trace);
            pass.out.deltaStates.push_back(*state);
        }
    } else {
        const auto a = attend(l, i, hn, r, pass);
        x = x + (l.postAttnNorm.defined() ? rmsNorm(a, l.postAttnNorm) : a);
    }
    RouterTrace router;
    const bool route = pass.capture.routers && l.moe.defined();
    const auto m = cfg_.gemmaNorms && l.moe.defined() ? gemmaMixture(l, x, route ? &router : nullptr)
                                                      : mlp(l, rmsNorm(x, l.postNorm), route ? &router : nullptr);
    if (route) {
        router.layer = static_cast<int>(i);
        if (pass.single)
            for (torch::Tensor* t : {&router.scores, &router.experts, &router.weights})
                *t = t->squeeze(0);
        pass.out.routers.push_back(router);
    }
    x = x + (l.postMlpNorm.defined() ? rmsNorm(m, l.postMlpNorm) : m);
    if (perLayerInput.defined()) { // Gemma E2B / E4B: the layer's own input, gated by the stream
        const auto gated = torch::gelu(dense(x, l.perLayerGateW), "tanh") * perLayerInput;
        x = x + rmsNorm(dense(gated, l.perLayerProjectionW), l.perLayerNorm);
    }
    return l.layerScalar.defined() ? x * l.layerScalar : x;
}

DecoderOutput LanguageModel::forward(const torch::Tensor& embeds, const std::vector<LayerRotary>& rotary, KvCache* cache,
                                     const DecoderCapture& capture, const DeepStackInput* deepstack, const GemmaInputs* gemma) const
{
    // Works on [B, L, hidden] (training batches share one layout); a single sequence is B = 1.
    const bool single = embeds.dim() == 2;
    const auto x0 = single ? embeds.unsqueeze(0) : embeds;
    const int64_t batch = x0.size(0), n = x0.size(1);
    if (cache && batch != 1)
        throw ModelError("the KV cache holds one sequence");
    for (int layer : capture.layers)
        if (layer < 0 || layer >= cfg_.layers || cfg_.isLinear(layer))
            throw ModelError("layer " + std::to_string(layer) +
                             " has no attention to capture; attention layers: " + attentionLayerList(cfg_));
    const int64_t past = cache ? cache->length() : 0;
    if (cache && cache->fixed() && (n != 1 || (capture.selection.rows.defined() && capture.selection.rows.numel() > 0)))
        throw ModelError("a KV cache of fixed capacity takes one token per pass, all of its rows captured");
    if (cache && cache->keys.empty()) {
        cache->keys.resize(layers_.size());
        cache->values.resize(layers_.size());
        cache->deltaNet.resize(layers_.size());
    }
    if (cfg_.perLayerInput > 0 && (!gemma || !gemma->perLayerIds.defined()))
        throw ModelError("Gemma's per-layer inputs need the pass's token ids (GemmaInputs::perLayerIds)");
    DecoderOutput out;
    Pass pass{cache, capture, capture.selection, {}, single, out, {}};
    // The captured rows' mask is the same in every layer: made once here, not in each layer's attention.
    if (!capture.layers.empty() && pass.selection.rows.defined() && pass.selection.rows.numel() > 0)
        pass.selection.rowsMask = kernels::causalRowsMask(pass.selection.rows, past, past + n, x0.scalar_type());
    kernels::Masking masking{true, past, {}, {}};
    if (cache && cache->fixed()) // the slots written so far, this token's included
        masking = {false, 0, {}, (cache->slots <= cache->slot).unsqueeze(0)};
    if (kernels::attentionPath() == kernels::AttentionPath::Explicit && n > 1) // the fused path needs no [n, L] mask
        masking.additive = kernels::causalRowsMask(torch::arange(n, x0.options().dtype(torch::kInt64)), past, past + n, x0.scalar_type());
    pass.masking = kindMasking(cfg_, masking, gemma ? gemma->blockIds : torch::Tensor(), past, n, cache, x0.device());
    if (!cfg_.slidingLayers.empty() && pass.selection.rowsMask.defined()) // the layer's own masks decide (attention_masks.h)
        pass.selection.rowsMask = torch::Tensor();
    if (cfg_.kvSharedLayers > 0)
        pass.passKv.resize(layers_.size());
    // The rotary tables in the activations' dtype, cast once per pass rather than in every layer (layers sharing a
    // table share its cast): two operators fewer per attention layer, and per decoding step.
    std::vector<LayerRotary> tables;
    tables.reserve(rotary.size());
    std::map<std::tuple<const void*, const void*, std::vector<int64_t>>, LayerRotary> casts; // the same tables, by storage and shape
    for (const LayerRotary& r : rotary) {
        if (!r.cos.defined() || r.cos.scalar_type() == x0.scalar_type()) {
            tables.push_back(r);
            continue;
        }
        auto [it, added] = casts.try_emplace(std::make_tuple(r.cos.data_ptr(), r.sin.data_ptr(), r.cos.sizes().vec()));
        if (added)
            it->second = {r.cos.to(x0.scalar_type()), r.sin.to(x0.scalar_type())};
        tables.push_back(it->second);
    }
    const auto perLayer =
        cfg_.perLayerInput > 0 ? perLayerInputs(gemma->perLayerIds.to(device_).view(x0.sizes().slice(0, 2)), x0) : torch::Tensor();
    if (capture.layerOutputs && perLayer.defined())
        out.perLayerInputs = perLayer;
    auto x = x0;
    for (size_t i = 0; i < layers_.size(); ++i) {
        x = decoderLayer(layers_[i], i, x, tables[i], pass, perLayer.defined() ? perLayer.select(-2, static_cast<int64_t>(i)) : perLayer);
        if (capture.layerOutputs)
            out.layerOutputs.push_back(single ? x.squeeze(0) : x);
        if (deepstack && i < deepstack->features.size()) {
            const auto& f = deepstack->features[i];
            x = x.index_add(1, deepstack->positions, (f.dim() == 2 ? f.unsqueeze(0).expand({batch, -1, -1}) : f).to(x.scalar_type()));
        }
    }
    if (cache)
        cache->tokens += n;
    out.finalNorm = rmsNorm(x, finalNorm_);
    out.logits = dense(capture.allLogits ? out.finalNorm : out.finalNorm.narrow(1, n - 1, 1), lmHead_);
    if (cfg_.finalSoftcap > 0) // Gemma 4: cap * tanh(logits / cap)
        out.logits = torch::tanh(out.logits / cfg_.finalSoftcap) * cfg_.finalSoftcap;
    if (single) {
        out.finalNorm = out.finalNorm.squeeze(0);
        out.logits = out.logits.squeeze(0);
    }
    return out;
}

} // namespace ropescope::model

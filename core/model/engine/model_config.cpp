#include "core/model/engine/model_config.h"

#include "core/io/input_file.h"
#include "core/model/engine/config_reader.h"
#include "core/model/engine/model_config_gemma.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <functional>

namespace ropescope::model {
namespace {

using config::Reader;

// Qwen3.5's text settings: the hybrid layer pattern, the Gated DeltaNet's shapes, partial rotary, the gate.
void readQwen35Text(const Reader& text, const Reader& rope, TextConfig& t, const std::string& file)
{
    t.zeroCentredNorm = true;
    t.attentionOutputGate = text.boolean("attn_output_gate", true);
    // rope_parameters first, then the text_config level (transformers' order), 0.25 by default.
    t.rotaryFraction = rope.number("partial_rotary_factor", text.number("partial_rotary_factor", 0.25, 1e-6, 1.0), 1e-6, 1.0);
    if (t.rotaryDim() < 2 || t.rotaryDim() % 2 != 0)
        throw BadInputFile(file + ": partial_rotary_factor gives " + std::to_string(t.rotaryDim()) + " rotary dims of head_dim " +
                           std::to_string(t.headDim()) + "; it must be a positive even number");
    t.linearKeyHeads = text.integer("linear_num_key_heads", 16, 1, 1024);
    t.linearKeyDim = text.integer("linear_key_head_dim", 128, 1, 4096);
    t.linearValueHeads = text.integer("linear_num_value_heads", 32, 1, 1024);
    t.linearValueDim = text.integer("linear_value_head_dim", 128, 1, 4096);
    t.convKernel = text.integer("linear_conv_kernel_dim", 4, 1, 64);
    if (t.linearValueHeads % t.linearKeyHeads != 0)
        throw BadInputFile(file + ": linear_num_value_heads must be a multiple of linear_num_key_heads");
    t.linearLayers.assign(static_cast<size_t>(t.layers), false);
    if (text.has("layer_types")) {
        const QJsonValue types = text.json()["layer_types"];
        if (!types.isArray() || types.toArray().size() != t.layers)
            throw BadInputFile(file + ": 'layer_types' must list one type per layer (" + std::to_string(t.layers) + ")");
        for (int i = 0; i < t.layers; ++i) {
            const QString type = types.toArray()[i].toString();
            if (type != "linear_attention" && type != "full_attention")
                throw BadInputFile(file + ": 'layer_types' entries must be linear_attention or full_attention, not '" + type.toStdString() +
                                   "'");
            t.linearLayers[static_cast<size_t>(i)] = type == "linear_attention";
        }
    } else {
        const int interval = text.integer("full_attention_interval", 4, 1, 1024);
        for (int i = 0; i < t.layers; ++i)
            t.linearLayers[static_cast<size_t>(i)] = (i + 1) % interval != 0;
    }
    if (t.attentionLayers().empty())
        throw BadInputFile(file + ": 'layer_types' has no full_attention layer; RopeScope's views need at least one");
}

// A family's mixture of experts, as its row of kFamilies gives it (defaults.experts 0: a dense decoder): the
// router, which also says which keys size it (Softmax: Qwen's num_experts, ...; SigmoidGrouped: GLM's and
// DeepSeek's n_routed_experts, n_group, ...), transformers' config defaults where a key is missing, and the names
// of its parts.
struct MoeRow {
    RouterKind router;
    struct {
        int experts, topK, intermediate;
        int shared; // the shared expert's width (Softmax) or n_shared_experts (SigmoidGrouped); 0: none
    } defaults;
    MoeNames names;
};

using Refuse = std::function<void(const char* key, const std::string& why)>;

// GLM-4.5V's router (DeepSeek's keys): sigmoid scores chosen within the best groups, a shared expert of
// n_shared_experts x moe_intermediate_size, the first first_k_dense_replace layers dense.
void readGroupedMoe(const Reader& text, const MoeRow& row, const std::string& type, TextConfig& t, const Refuse& refuse)
{
    MoeConfig& m = t.moe;
    m.experts = text.integer("n_routed_experts", row.defaults.experts, 1, 1 << 16);
    m.topK = text.integer("num_experts_per_tok", row.defaults.topK, 1, 1 << 16);
    m.intermediate = text.integer("moe_intermediate_size", row.defaults.intermediate, 1);
    // The product in 64 bits: 1024 shared experts of 2^30 would overflow an int (undefined, and wrapped it read as
    // a negative width or none at all).
    const int64_t shared = int64_t(text.integer(row.names.sharedKey, row.defaults.shared, 0, 1 << 10)) * m.intermediate;
    if (shared > (1 << 30))
        refuse(row.names.sharedKey,
               std::to_string(shared / m.intermediate) + " x moe_intermediate_size " + std::to_string(m.intermediate) +
                   " is a shared expert wider than 2^30");
    m.sharedIntermediate = static_cast<int>(shared);
    m.groups = text.integer("n_group", 1, 1, 1 << 16);
    m.topkGroup = text.integer("topk_group", 1, 1, 1 << 16);
    m.normTopK = text.boolean("norm_topk_prob", true);
    m.routedScaling = text.number("routed_scaling_factor", 1.0, 1e-6, 1e6);
    const std::string scoring = text.text("scoring_func", "sigmoid"), method = text.text("topk_method", "noaux_tc");
    if (scoring != "sigmoid")
        refuse("scoring_func", "'" + scoring + "': GLM-4.5V's router scores with sigmoid, the only one RopeScope runs for " + type);
    if (method != "noaux_tc")
        refuse("topk_method", "'" + method + "': GLM-4.5V chooses experts by noaux_tc (grouped top-k with a correction bias)");
    if (m.experts % m.groups != 0)
        refuse("n_group", std::to_string(m.groups) + " does not divide the " + std::to_string(m.experts) + " routed experts");
    if (m.experts / m.groups < 2)
        refuse("n_group", std::to_string(m.groups) + " leaves fewer than 2 experts per group (a group is scored by its best two)");
    if (m.topkGroup > m.groups)
        refuse("topk_group", std::to_string(m.topkGroup) + " is more than n_group " + std::to_string(m.groups));
    if (m.topK > m.topkGroup * (m.experts / m.groups))
        refuse("num_experts_per_tok", std::to_string(m.topK) + " is more than the experts of the topk_group chosen groups");
    const int dense = text.integer("first_k_dense_replace", 1, 0, t.layers);
    m.sparseLayers.assign(static_cast<size_t>(t.layers), false);
    for (int i = dense; i < t.layers; ++i)
        m.sparseLayers[static_cast<size_t>(i)] = true;
}

// The Qwen MoE routers (Qwen's keys): a softmax over the experts, the top-k renormalised, a shared expert of its own
// width where the family has one, the layers every decoder_sparse_step-th sparse but those of mlp_only_layers.
void readSoftmaxMoe(const Reader& text, const MoeRow& row, const std::string& type, TextConfig& t, const Refuse& refuse)
{
    MoeConfig& m = t.moe;
    m.experts = text.integer("num_experts", row.defaults.experts, 1, 1 << 16);
    m.topK = text.integer("num_experts_per_tok", row.defaults.topK, 1, 1 << 16);
    m.intermediate = text.integer("moe_intermediate_size", row.defaults.intermediate, 1);
    if (*row.names.sharedKey) {
        m.sharedIntermediate = text.integer(row.names.sharedKey, row.defaults.shared, 0);
        m.sharedExpertGate = m.sharedIntermediate > 0 && *row.names.sharedGate;
    }
    // transformers' Qwen3-VL-MoE router always renormalises the top-k (whatever norm_topk_prob says); a config that
    // asks otherwise would run differently there than it reads, so it is refused.
    m.normTopK = text.boolean("norm_topk_prob", true);
    if (!m.normTopK)
        refuse("norm_topk_prob", "false: the Qwen MoE routers RopeScope runs renormalise the top-k weights, as transformers' do");
    for (const char* key : {"n_group", "topk_group", "scoring_func", "topk_method", "n_shared_experts"})
        if (text.has(key))
            refuse(key, "is a GLM / DeepSeek router setting that " + type + " does not have; RopeScope will not guess how it applies");
    if (text.has("routed_scaling_factor") && text.number("routed_scaling_factor", 1.0, 0.0, 1e6) != 1.0)
        refuse("routed_scaling_factor", "is not 1: the Qwen MoE routers do not scale their weights");
    const int step = text.integer("decoder_sparse_step", 1, 1, 1 << 10);
    const std::vector<int> denseOnly = text.integers("mlp_only_layers", {});
    m.sparseLayers.assign(static_cast<size_t>(t.layers), false);
    for (int i = 0; i < t.layers; ++i)
        m.sparseLayers[static_cast<size_t>(i)] = (i + 1) % step == 0 && std::find(denseOnly.begin(), denseOnly.end(), i) == denseOnly.end();
    for (int i : denseOnly)
        if (i < 0 || i >= t.layers)
            refuse("mlp_only_layers", "lists layer " + std::to_string(i) + ", but the decoder has " + std::to_string(t.layers));
}

// The mixture of experts of the MoE members, by the row's router and defaults. A setting whose value RopeScope
// would not apply as the model does is refused naming the key, never ignored.
void readMoe(const Reader& text, const MoeRow& row, const std::string& type, TextConfig& t, const std::string& file)
{
    MoeConfig& m = t.moe;
    m.router = row.router;
    m.names = row.names;
    const Refuse refuse = [&](const char* key, const std::string& why) { throw BadInputFile(file + ": text_config." + key + " " + why); };
    switch (row.router) {
    case RouterKind::SigmoidGrouped: readGroupedMoe(text, row, type, t, refuse); break;
    case RouterKind::Softmax: readSoftmaxMoe(text, row, type, t, refuse); break;
    case RouterKind::GemmaScaled: break; // Gemma 4's one model_type is dense or not by enable_moe_block: its text reader's
    }
    if (m.topK > m.experts)
        refuse("num_experts_per_tok", std::to_string(m.topK) + " is more than the " + std::to_string(m.experts) + " experts");
    if (m.sparseCount() == 0)
        throw BadInputFile(file + ": '" + type +
                           "' with no sparse layer: every layer is dense (check first_k_dense_replace / mlp_only_layers)");
}

// The rows of a learned position table of image_size // patch_size on a side (GLM-V, PaddleOCR-VL), floored as
// transformers' num_patches is: SigLIP's 384 / 14 gives 27 x 27.
int learnedTableRows(const Reader& v, int defaultImageSize, int patchSize, const std::string& file)
{
    const int imageSize = v.integer("image_size", defaultImageSize, 1, 1 << 16);
    if (imageSize < patchSize)
        throw BadInputFile(file + ": vision_config.image_size " + std::to_string(imageSize) + " is smaller than patch_size " +
                           std::to_string(patchSize));
    const int side = imageSize / patchSize;
    if (static_cast<int64_t>(side) * side > (1 << 24))
        throw BadInputFile(file + ": vision_config.image_size / patch_size gives a position table over 2^24 rows");
    return side * side;
}

// GLM-V's decoder: half of each head rotates on adjacent pairs, sandwich norms, a fused gate_up_proj, q/k/v
// biases always (Glm4vTextAttention ignores attention_bias), head_dim = hidden / heads.
void readGlmText(const Reader& text, const Reader& rope, TextConfig& t, const std::string& file)
{
    t.pairing = geometry::RotaryPairing::Adjacent;
    t.sandwichNorms = true;
    t.fusedGateUp = true;
    t.attentionBias = true;
    // rope_parameters (transformers 5) first, then text_config's legacy key, 0.5 by default.
    t.rotaryFraction = rope.number("partial_rotary_factor", text.number("partial_rotary_factor", 0.5, 1e-6, 1.0), 1e-6, 1.0);
    if (t.explicitHeadDim != 0 && t.explicitHeadDim * t.heads != t.hidden)
        throw BadInputFile(file + ": head_dim " + std::to_string(t.explicitHeadDim) + " is not hidden_size / num_attention_heads = " +
                           std::to_string(t.hidden / t.heads) + ", which GLM-V's attention always uses");
    t.explicitHeadDim = 0;
    if (t.rotaryDim() < 2 || t.rotaryDim() % 2 != 0)
        throw BadInputFile(file + ": partial_rotary_factor gives " + std::to_string(t.rotaryDim()) + " rotary dims of head_dim " +
                           std::to_string(t.headDim()) + "; it must be a positive even number");
}

// GLM-4.5V's decoder (glm4v_moe): GLM-4.1V's attention with the half-split rotation (pairs (d, d + r/2)), two
// RMSNorms per layer, separate gate and up projections in its dense layers, q/k/v biases as attention_bias says,
// q/k norms as use_qk_norm says, and head_dim as given (GLM-4.5V: 96 heads of 128 in a 4096-wide model).
void readGlmMoeText(const Reader& text, const Reader& rope, TextConfig& t, const std::string& file)
{
    t.pairing = geometry::RotaryPairing::Half;
    t.sandwichNorms = false;
    t.fusedGateUp = false;
    t.attentionBias = text.boolean("attention_bias", true);
    t.qkNorm = text.boolean("use_qk_norm", false);
    t.rotaryFraction = rope.number("partial_rotary_factor", text.number("partial_rotary_factor", 0.5, 1e-6, 1.0), 1e-6, 1.0);
    if (t.rotaryDim() < 2 || t.rotaryDim() % 2 != 0)
        throw BadInputFile(file + ": partial_rotary_factor gives " + std::to_string(t.rotaryDim()) + " rotary dims of head_dim " +
                           std::to_string(t.headDim()) + "; it must be a positive even number");
}

// GLM-V's vision tower (defaults: GLM-4.1V-9B-Thinking's vision_config).
void readGlmVision(const Reader& v, VisionConfig& vc, int textHidden, const std::string& file)
{
    vc.depth = v.integer("depth", 24, 1, 1024);
    vc.width = v.integer("hidden_size", 1536, 1);
    vc.heads = v.integer("num_heads", 12, 1, 1024);
    vc.patchSize = v.integer("patch_size", 14, 1, 1024);
    vc.act = v.text("hidden_act", "silu");
    if (vc.act != "silu")
        throw BadInputFile(file + ": vision_config.hidden_act '" + vc.act + "': GLM-V's vision MLPs and merger run silu");
    vc.normEps = v.number("rms_norm_eps", 1e-5, 1e-30, 1.0);
    vc.attentionBias = v.boolean("attention_bias", false);
    vc.mergerHidden = v.integer("intermediate_size", 13696, 1);
    vc.outHidden = v.integer("out_hidden_size", textHidden, 1);
    vc.mlpHidden = vc.outHidden; // Glm4VisionMlp is out_hidden_size wide
    vc.positionEmbeddings = learnedTableRows(v, 336, vc.patchSize, file);
}

// PaddleOCR-VL's SigLIP-NaViT tower (defaults: the Hub's PaddlePaddle/PaddleOCR-VL vision_config): LayerNorm
// encoder layers, a learned table of (image_size / patch)^2 positions resized bilinearly per image, patches in
// raster order one frame deep (its image processor's temporal_patch_size is 1, whatever the config says),
// and a projector that merges 2x2 patches into the decoder's width.
void readSiglipVision(const Reader& v, VisionConfig& vc, int textHidden, const std::string& file)
{
    vc.depth = v.integer("num_hidden_layers", 27, 1, 1024);
    vc.width = v.integer("hidden_size", 1152, 1);
    vc.heads = v.integer("num_attention_heads", 16, 1, 1024);
    vc.mlpHidden = v.integer("intermediate_size", 4304, 1);
    vc.patchSize = v.integer("patch_size", 14, 1, 1024);
    vc.inChannels = v.integer("num_channels", 3, 1, 16);
    vc.act = v.text("hidden_act", "gelu_pytorch_tanh");
    vc.normEps = v.number("layer_norm_eps", 1e-6, 1e-30, 1.0);
    vc.temporalPatch = 1;
    vc.rasterPatches = true;
    vc.outHidden = textHidden;
    vc.positionEmbeddings = learnedTableRows(v, 384, vc.patchSize, file);
}

} // namespace

// "3, 7" (or "0-27" when every layer attends).
std::string attentionLayerList(const TextConfig& cfg)
{
    const std::vector<int> layers = cfg.attentionLayers();
    if (static_cast<int>(layers.size()) == cfg.layers)
        return "0-" + std::to_string(cfg.layers - 1);
    std::string list;
    for (int l : layers)
        list += (list.empty() ? "" : ", ") + std::to_string(l);
    return list;
}

std::string hybridNote(const TextConfig& t)
{
    const std::vector<int> attention = t.attentionLayers();
    if (static_cast<int>(attention.size()) == t.layers)
        return {};
    std::string note = std::to_string(t.layers - static_cast<int>(attention.size())) + " of " + std::to_string(t.layers) +
        " layers are Gated DeltaNet (linear attention with no positions: no scheme moves them, they have no maps); "
        "the scheme acts on the attention layers " +
        attentionLayerList(t);
    if (t.rotaryDim() < t.headDim())
        note += ", which rotate " + std::to_string(t.rotaryDim()) + " of " + std::to_string(t.headDim()) + " dims per head";
    return note;
}

int MoeConfig::sparseCount() const
{
    return static_cast<int>(std::count(sparseLayers.begin(), sparseLayers.end(), true));
}

std::string moeNote(const TextConfig& t)
{
    const MoeConfig& m = t.moe;
    if (!m.any())
        return {};
    std::string note = "MoE: " + std::to_string(m.experts) + " experts, top-" + std::to_string(m.topK);
    if (m.sharedIntermediate > 0)
        note += " + a shared expert";
    if (m.sparseCount() < t.layers)
        note += " (" + std::to_string(m.sparseCount()) + " of " + std::to_string(t.layers) + " layers sparse)";
    return note;
}

std::vector<int> TextConfig::attentionLayers() const
{
    std::vector<int> out;
    for (int i = 0; i < layers; ++i)
        if (!isLinear(i))
            out.push_back(i);
    return out;
}

namespace {

// GLM-4.1V-9B-Thinking's text_config, where a key is missing.
void glmTextDefaults(TextConfig& t)
{
    t.hidden = 4096;
    t.intermediate = 13696;
    t.layers = 40;
    t.heads = 32;
    t.kvHeads = 2;
    t.vocab = 151552;
    t.rmsEps = 1e-5;
    t.ropeTheta = 1e4;
    t.mropeSection = {8, 12, 12};
}

// Qwen3-VL and Qwen3.5: q/k norms, no q/k/v biases, MRoPE-I (transformers interleaves whatever
// mrope_interleaved says) over sections (24, 20, 20).
void qwen3TextDefaults(TextConfig& t)
{
    t.attentionBias = false;
    t.qkNorm = true;
    t.mropeSection = {24, 20, 20};
    t.mropeInterleaved = true;
}

void readQwen2Vision(const Reader& v, ModelConfig& c, const std::string&)
{
    VisionConfig& vc = c.vision;
    vc.width = v.integer("embed_dim", vc.width, 1);
    vc.mlpHidden = vc.width * v.integer("mlp_ratio", 4, 1, 64);
    vc.outHidden = v.integer("hidden_size", c.text.hidden, 1);
    vc.act = v.text("hidden_act", "quick_gelu");
}

void readQwen25Vision(const Reader& v, ModelConfig& c, const std::string&)
{
    VisionConfig& vc = c.vision;
    vc.width = v.integer("hidden_size", vc.width, 1);
    vc.mlpHidden = v.integer("intermediate_size", vc.mlpHidden, 1);
    vc.outHidden = v.integer("out_hidden_size", c.text.hidden, 1);
    vc.act = v.text("hidden_act", "silu");
    vc.fullAttentionBlocks = v.integers("fullatt_block_indexes", {7, 15, 23, 31});
    vc.windowSize = v.integer("window_size", vc.windowSize, 1);
    vc.tokensPerSecond = v.number("tokens_per_second", vc.tokensPerSecond, 0.0, 1e6);
}

// Qwen3-VL's and Qwen3.5's tower (defaults of transformers' Qwen3VLVisionConfig): a learned square position
// grid, and DeepStack blocks (Qwen3-VL; Qwen3.5 has none).
void readQwen3Vision(const Reader& v, ModelConfig& c, const std::string& file)
{
    VisionConfig& vc = c.vision;
    const bool qwen35 = c.architecture == Architecture::Qwen35;
    vc.depth = v.integer("depth", 27, 1, 1024);
    vc.patchSize = v.integer("patch_size", 16, 1, 1024);
    vc.width = v.integer("hidden_size", 1152, 1);
    vc.mlpHidden = v.integer("intermediate_size", 4304, 1);
    vc.outHidden = v.integer("out_hidden_size", c.text.hidden, 1);
    vc.act = v.text("hidden_act", "gelu_pytorch_tanh");
    vc.positionEmbeddings = v.integer("num_position_embeddings", 2304, 1, 1 << 24);
    vc.deepstackBlocks = v.integers("deepstack_visual_indexes", qwen35 ? std::vector<int>{} : std::vector<int>{8, 16, 24});
    if (qwen35 && !vc.deepstackBlocks.empty())
        throw BadInputFile(file + ": vision_config.deepstack_visual_indexes: Qwen3.5 has no DeepStack, so the list must be empty");
    const int side = vc.positionGridSide();
    if (side * side != vc.positionEmbeddings)
        throw BadInputFile(file + ": vision_config.num_position_embeddings must be a square number (a side x side grid), not " +
                           std::to_string(vc.positionEmbeddings));
    for (size_t i = 0; i < vc.deepstackBlocks.size(); ++i) {
        const int b = vc.deepstackBlocks[i];
        if (b < 0 || b >= vc.depth || std::count(vc.deepstackBlocks.begin(), vc.deepstackBlocks.begin() + static_cast<long>(i), b))
            throw BadInputFile(file + ": vision_config.deepstack_visual_indexes must list distinct vision blocks below depth " +
                               std::to_string(vc.depth));
    }
    if (static_cast<int>(vc.deepstackBlocks.size()) > c.text.layers)
        throw BadInputFile(file + ": more DeepStack features (" + std::to_string(vc.deepstackBlocks.size()) + ") than decoder layers");
}

void readGlmTower(const Reader& v, ModelConfig& c, const std::string& file)
{
    readGlmVision(v, c.vision, c.text.hidden, file);
}

void readPaddleTower(const Reader& v, ModelConfig& c, const std::string& file)
{
    readSiglipVision(v, c.vision, c.text.hidden, file);
}

// GLM-4.1V's special ids where the config leaves one out, its video wrappers and its eos.
void readGlmTokens(const Reader& root, ModelConfig& c)
{
    c.imageToken = root.integer("image_token_id", 151343);
    c.videoToken = root.integer("video_token_id", 151344);
    c.visionStart = root.integer("image_start_token_id", 151339);
    c.visionEnd = root.integer("image_end_token_id", 151340);
    c.videoStart = root.integer("video_start_token_id", 151341);
    c.videoEnd = root.integer("video_end_token_id", 151342);
    c.glm46 = c.modelType == "glm46v";
    c.eos = 151329;
}

// One row per config.json model_type: the architecture it runs as, its mixture of experts (kDense, or its router,
// defaults and tensor names), and what differs in reading it (each step null where the family has nothing of its
// own). Adding a family is adding its row (docs/ARCHITECTURE.md, "A model family").
struct FamilyRow {
    const char* modelType;
    Architecture architecture;
    MoeRow moe;
    void (*textDefaults)(TextConfig&);
    void (*readText)(const Reader& text, const Reader& rope, TextConfig&, const std::string& file);
    void (*readVision)(const Reader& vision, ModelConfig&, const std::string& file);
    void (*readTokens)(const Reader& root, ModelConfig&);
};

// The mixtures the rows below name: kDense for a dense decoder; an MoE member's router, transformers' defaults
// (experts, top-k, each expert's width, the shared expert) and the names of its tensors and of the key that sizes
// its shared expert.
constexpr MoeRow kDense{};
constexpr MoeRow kQwen3VlMoe{RouterKind::Softmax, {60, 4, 1408, 0}, {"gate.weight", "", "shared_expert.", "", ""}};
constexpr MoeRow kQwen35Moe{RouterKind::Softmax,
                            {256, 8, 512, 512},
                            {"gate.weight", "", "shared_expert.", "shared_expert_gate.weight", "shared_expert_intermediate_size"}};
constexpr MoeRow kGlm4vMoe{RouterKind::SigmoidGrouped,
                           {128, 8, 1408, 1},
                           {"gate.weight", "gate.e_score_correction_bias", "shared_experts.", "", "n_shared_experts"}};

constexpr FamilyRow kFamilies[] = {
    {"qwen2_vl", Architecture::Qwen2VL, kDense, nullptr, nullptr, readQwen2Vision, nullptr},
    {"qwen2_5_vl", Architecture::Qwen25VL, kDense, nullptr, nullptr, readQwen25Vision, nullptr},
    {"qwen3_vl", Architecture::Qwen3VL, kDense, qwen3TextDefaults, nullptr, readQwen3Vision, nullptr},
    {"qwen3_vl_moe", Architecture::Qwen3VL, kQwen3VlMoe, qwen3TextDefaults, nullptr, readQwen3Vision, nullptr},
    {"qwen3_5", Architecture::Qwen35, kDense, qwen3TextDefaults, readQwen35Text, readQwen3Vision, nullptr},
    {"qwen3_5_moe", Architecture::Qwen35, kQwen35Moe, qwen3TextDefaults, readQwen35Text, readQwen3Vision, nullptr},
    {"glm4v", Architecture::GlmV, kDense, glmTextDefaults, readGlmText, readGlmTower, readGlmTokens},
    {"glm46v", Architecture::GlmV, kDense, glmTextDefaults, readGlmText, readGlmTower, readGlmTokens},
    {"glm4v_moe", Architecture::GlmV, kGlm4vMoe, glmTextDefaults, readGlmMoeText, readGlmTower, readGlmTokens},
    {"paddleocr_vl", Architecture::PaddleOcrVl, kDense, nullptr, nullptr, readPaddleTower, nullptr},
    {"gemma3", Architecture::Gemma3, kDense, gemmaTextDefaults, readGemma3Text, readGemma3Vision, readGemma3Tokens},
    {"gemma4", Architecture::Gemma4, kDense, gemmaTextDefaults, readGemma4Text, readGemma4Vision, readGemma4Tokens},
};

const FamilyRow& familyRow(const std::string& type, const std::string& file)
{
    for (const FamilyRow& row : kFamilies)
        if (type == row.modelType)
            return row;
    std::string supported;
    for (const FamilyRow& row : kFamilies)
        supported += (supported.empty() ? "" : ", ") + std::string(row.modelType);
    throw BadInputFile(file + ": unknown architecture '" + type + "' (supported: " + supported + ")");
}

// The keys every decoder reads alike (defaults: the family's, then Qwen2-VL's).
void readCommonText(const Reader& root, const Reader& text, ModelConfig& c)
{
    TextConfig& t = c.text;
    t.hidden = text.integer("hidden_size", t.hidden, 1);
    t.intermediate = text.integer("intermediate_size", t.intermediate, 1);
    t.layers = text.integer("num_hidden_layers", t.layers, 1, 1024);
    t.heads = text.integer("num_attention_heads", t.heads, 1, 1024);
    t.kvHeads = text.integer("num_key_value_heads", t.heads, 1, 1024);
    t.vocab = text.integer("vocab_size", t.vocab, 1);
    t.rmsEps = text.number("rms_norm_eps", t.rmsEps, 1e-30, 1.0);
    t.tieEmbeddings = root.boolean("tie_word_embeddings", text.boolean("tie_word_embeddings", t.tieEmbeddings));
    t.explicitHeadDim = text.integer("head_dim", 0, 0, 4096);
    t.attentionBias = text.boolean("attention_bias", t.attentionBias);
    if (c.architecture == Architecture::PaddleOcrVl) // ERNIE-4.5: one use_bias for every projection of the decoder (false on the Hub)
        t.attentionBias = text.boolean("use_bias", false);
}

// rope_theta and mrope_section: rope_parameters (newest), rope_scaling, or flat. Returns the object that held them.
Reader readRope(const Reader& root, const Reader& text, TextConfig& t, const std::string& file)
{
    const Reader scaling = text.has("rope_parameters") ? text.object("rope_parameters")
        : text.has("rope_scaling")                     ? text.object("rope_scaling")
                                                       : root.object("rope_scaling");
    // theta^(2j/d) must stay a finite float: the rotary frequencies are computed in float32.
    constexpr double kThetaMin = 1.0 + 1e-9, kThetaMax = 1e30;
    t.ropeTheta = scaling.number(
        "rope_theta", text.number("rope_theta", root.number("rope_theta", t.ropeTheta, kThetaMin, kThetaMax), kThetaMin, kThetaMax),
        kThetaMin, kThetaMax);
    t.mropeSection = scaling.integers("mrope_section", t.mropeSection);
    // A rope type changes the frequencies (yarn, dynamic NTK, linear, ...); RopeScope applies the plain M-RoPE
    // tables, so a model trained with another type would run differently from transformers: refused, named.
    const std::string ropeType = scaling.text("rope_type", scaling.text("type", "default"));
    if (ropeType != "default" && ropeType != "mrope")
        throw BadInputFile(file + ": rope type '" + ropeType +
                           "' is not applied by RopeScope (it runs the default M-RoPE frequencies); the model would run "
                           "differently from transformers");
    return scaling;
}

// Heads, head_dim and mrope_section fit each other.
void checkTextShapes(const TextConfig& t, const std::string& file)
{
    if ((t.explicitHeadDim == 0 && t.hidden % t.heads != 0) || t.heads % t.kvHeads != 0)
        throw BadInputFile(file + ": hidden_size must divide into heads and heads into key/value heads");
    if (t.headDim() % 2 != 0)
        throw BadInputFile(file + ": head_dim must be even (rotary pairs), not " + std::to_string(t.headDim()));
    int64_t sectionSum = 0; // in 64 bits: three entries of up to 1e6 each
    for (int s : t.mropeSection) {
        if (s < 0)
            throw BadInputFile(file + ": mrope_section entries must not be negative");
        sectionSum += s;
    }
    if (!t.mropeSection.empty() && (t.mropeSection.size() != 3 || sectionSum * 2 != t.rotaryDim()))
        throw BadInputFile(file +
                           ": mrope_section must have 3 entries summing to the rotary dims / 2 = " + std::to_string(t.rotaryDim() / 2));
}

// The keys every vision tower reads alike, the family's own, then what every tower needs of them.
void readVision(const Reader& v, const FamilyRow& family, ModelConfig& c, const std::string& file)
{
    VisionConfig& vc = c.vision;
    vc.depth = v.integer("depth", vc.depth, 1, 1024);
    vc.heads = v.integer("num_heads", vc.heads, 1, 1024);
    vc.patchSize = v.integer("patch_size", v.integer("spatial_patch_size", vc.patchSize, 1, 1024), 1, 1024);
    vc.temporalPatch = v.integer("temporal_patch_size", vc.temporalPatch, 1, 64);
    vc.mergeSize = v.integer("spatial_merge_size", vc.mergeSize, 1, 64);
    vc.inChannels = v.integer("in_chans", v.integer("in_channels", vc.inChannels, 1, 16), 1, 16);
    family.readVision(v, c, file);
    if (vc.act != "quick_gelu" && vc.act != "gelu" && vc.act != "gelu_pytorch_tanh" && vc.act != "silu")
        throw BadInputFile(file + ": vision_config.hidden_act '" + vc.act + "' is not one of quick_gelu, gelu, gelu_pytorch_tanh, silu");
    if (vc.width % vc.heads != 0 || vc.headDim() % 4 != 0)
        throw BadInputFile(file + ": vision width must split into heads with head_dim divisible by 4");
    if (vc.outHidden != c.text.hidden)
        throw BadInputFile(file + ": the vision merger outputs " + std::to_string(vc.outHidden) + " but the decoder is " +
                           std::to_string(c.text.hidden) + " wide");
}

void readTokens(const Reader& root, const Reader& text, const FamilyRow& family, ModelConfig& c)
{
    c.imageToken = root.integer("image_token_id", c.imageToken);
    c.videoToken = root.integer("video_token_id", c.videoToken);
    c.visionStart = root.integer("vision_start_token_id", c.visionStart);
    c.visionEnd = root.integer("vision_end_token_id", c.visionEnd);
    if (family.readTokens)
        family.readTokens(root, c);
    // eos_token_id may be a list (several stop tokens); the first is the one generation stops on.
    for (const Reader* r : {&text, &root}) {
        const QJsonValue e = r->json()["eos_token_id"];
        if (e.isArray() && !e.toArray().isEmpty() && e.toArray()[0].isDouble()) {
            c.eos = e.toArray()[0].toInt();
            break;
        }
        if (e.isDouble()) {
            c.eos = r->integer("eos_token_id", c.eos);
            break;
        }
    }
}

} // namespace

ModelConfig parseModelConfig(const QByteArray& bytes, const QString& name)
{
    const std::string file = name.toStdString();
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (doc.isNull() || !doc.isObject())
        throw BadInputFile(file + ": not a JSON object (" + error.errorString().toStdString() + ")");
    const Reader root(doc.object(), file);

    ModelConfig c;
    c.modelType = root.text("model_type", "");
    const FamilyRow& family = familyRow(c.modelType, file);
    c.architecture = family.architecture;
    if (family.textDefaults)
        family.textDefaults(c.text);
    // Newer configs nest the language model under text_config; older ones are flat.
    const Reader text = root.has("text_config") ? root.object("text_config") : root;
    readCommonText(root, text, c);
    // Gemma's rope is per layer type (its readers take it from there; Gemma 3's older configs keep it at the top).
    const Reader rope = isGemma(c.architecture) ? root : readRope(root, text, c.text, file);
    if (family.readText)
        family.readText(text, rope, c.text, file);
    if (family.moe.defaults.experts > 0)
        readMoe(text, family.moe, c.modelType, c.text, file);
    checkTextShapes(c.text, file);
    if (isGemma(c.architecture))
        checkGemmaShapes(c.text, file);
    readVision(root.object("vision_config"), family, c, file);
    readTokens(root, text, family, c);
    return c;
}

const char* architectureName(Architecture a)
{
    switch (a) {
    case Architecture::Qwen2VL: return "qwen2_vl";
    case Architecture::Qwen25VL: return "qwen2_5_vl";
    case Architecture::Qwen3VL: return "qwen3_vl";
    case Architecture::Qwen35: return "qwen3_5";
    case Architecture::GlmV: return "glm4v";
    case Architecture::PaddleOcrVl: return "paddleocr_vl";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Gemma4: return "gemma4";
    }
    return "";
}

int VisionConfig::positionGridSide() const
{
    return static_cast<int>(std::lround(std::sqrt(static_cast<double>(positionEmbeddings))));
}

ModelConfig loadModelConfig(const QString& path)
{
    try {
        return parseModelConfig(io::readInputFile(path, 16 << 20, "model config"), path);
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
}

} // namespace ropescope::model

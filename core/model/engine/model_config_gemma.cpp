// Gemma 3 and Gemma 4 in config.json: layer kinds (sliding and full, each with its own head size and rotary), the
// flags of each member (31B, 26B-A4B, E2B / E4B; Gemma 3 4B-27B) and their vision towers, as transformers 5.16 reads
// them (configuration_gemma3.py, configuration_gemma4.py at c1ff11866b). Anything RopeScope would not run as
// transformers does is refused naming its key.
#include "core/model/engine/model_config_gemma.h"

#include "core/model/engine/config_reader.h"

#include <algorithm>
#include <cmath>

namespace ropescope::model {

LayerKind TextConfig::layerKind(int layer) const
{
    if (kindIndex(layer) == 1)
        return full;
    LayerKind k;
    k.headDim = headDim();
    k.kvHeads = kvHeads;
    k.theta = ropeTheta;
    k.rotaryFraction = rotaryFraction;
    k.window = isSliding(layer) ? slidingWindow : 0;
    return k;
}

int TextConfig::kvSourceLayer(int layer) const
{
    const int firstShared = layers - kvSharedLayers;
    if (kvSharedLayers == 0 || layer < firstShared)
        return -1;
    for (int i = firstShared - 1; i >= 0; --i)
        if (isSliding(i) == isSliding(layer))
            return i;
    return -1; // refused at load: checkGemmaShapes
}

int TextConfig::mlpWidth(int layer) const
{
    return doubleWideMlp && kvSourceLayer(layer) >= 0 ? 2 * intermediate : intermediate;
}

namespace {

using config::Reader;

[[noreturn]] void refuse(const std::string& file, const std::string& key, const std::string& why)
{
    throw BadInputFile(file + ": text_config." + key + " " + why);
}

// layer_types, or transformers' default pattern (five sliding, one full); the last layer is always full.
void readLayerTypes(const Reader& text, TextConfig& t, const std::string& file)
{
    t.slidingLayers.assign(static_cast<size_t>(t.layers), false);
    if (text.has("layer_types")) {
        const QJsonValue types = text.json()["layer_types"];
        if (!types.isArray() || types.toArray().size() != t.layers)
            refuse(file, "layer_types", "must list one type per layer (" + std::to_string(t.layers) + ")");
        for (int i = 0; i < t.layers; ++i) {
            const QString type = types.toArray()[i].toString();
            if (type != "sliding_attention" && type != "full_attention")
                refuse(file, "layer_types", "entries must be sliding_attention or full_attention, not '" + type.toStdString() + "'");
            t.slidingLayers[static_cast<size_t>(i)] = type == "sliding_attention";
        }
    } else {
        const int pattern = text.integer("sliding_window_pattern", 6, 1, 1 << 16);
        for (int i = 0; i < t.layers; ++i)
            t.slidingLayers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
    }
    t.slidingLayers.back() = false; // transformers forces the last layer full, warning
    t.slidingWindow = text.integer("sliding_window", t.slidingWindow, 1, 1 << 30);
}

// One layer type's rope_parameters entry: its theta, and the type's frequencies (default, proportional or linear).
void readKindRope(const Reader& rope, const char* layerType, double defaultTheta, LayerKind& k, const std::string& file)
{
    const Reader r = rope.object(layerType);
    const std::string where = std::string("rope_parameters.") + layerType;
    k.theta = r.number("rope_theta", defaultTheta, 1.0 + 1e-9, 1e30);
    const std::string type = r.text("rope_type", "default");
    k.linearFactor = r.number("factor", 1.0, 1e-6, 1e6);
    k.rotaryFraction = r.number("partial_rotary_factor", 1.0, 0.0, 1.0);
    if (type == "proportional")
        k.proportional = true;
    else if (type != "default" && type != "linear")
        refuse(file, where + ".rope_type", "'" + type + "' is not one RopeScope applies (default, linear, proportional)");
    if (type == "default" && (k.linearFactor != 1.0 || k.rotaryFraction != 1.0))
        refuse(file, where, "sets factor or partial_rotary_factor with rope_type default, which transformers ignores there");
    if (!k.proportional && k.rotaryFraction != 1.0)
        refuse(file, where + ".partial_rotary_factor", "applies only to the proportional rope_type");
}

void checkKind(const LayerKind& k, const char* what, int heads, const std::string& file)
{
    if (k.headDim < 2 || k.headDim % 2 != 0)
        refuse(file, what, "gives a head_dim of " + std::to_string(k.headDim) + "; it must be a positive even number");
    if (heads % k.kvHeads != 0)
        refuse(file, what,
               "gives " + std::to_string(k.kvHeads) + " key/value heads, which do not divide the " + std::to_string(heads) +
                   " attention heads");
    if (k.proportional && (k.rotaryDim() / 2 < 1))
        refuse(file, what, "rotates no dims: partial_rotary_factor x head_dim / 2 is below 1");
}

// What both generations share: four norms, a gelu-tanh MLP, scaled embeddings, sliding layers, q/k norms, no biases.
void readGemmaCommon(const Reader& text, TextConfig& t, const std::string& file)
{
    t.gemmaNorms = true;
    t.geluMlp = true;
    t.scaledEmbeddings = true;
    t.qkNorm = true;
    t.attentionBias = text.boolean("attention_bias", false);
    if (t.attentionBias)
        refuse(file, "attention_bias", "true: no Gemma checkpoint has attention biases, and RopeScope reads none for Gemma");
    const std::string act = text.text("hidden_activation", text.text("hidden_act", "gelu_pytorch_tanh"));
    if (act != "gelu_pytorch_tanh")
        refuse(file, "hidden_activation", "'" + act + "': Gemma's MLPs run gelu_pytorch_tanh, the only one RopeScope runs for it");
    t.finalSoftcap = text.number("final_logit_softcapping", 0.0, 0.0, 1e6);
    if (text.has("attn_logit_softcapping") && text.number("attn_logit_softcapping", 0.0, 0.0, 1e6) != 0.0)
        refuse(file, "attn_logit_softcapping", "is set: RopeScope's attention does not cap scores (no Gemma 3 on the Hub does)");
    readLayerTypes(text, t, file);
}

} // namespace

// 26B-A4B: every layer runs its dense MLP and, beside it, top-k of the experts (moe_block.cpp's GemmaScaled router).
static void readGemma4Moe(const Reader& text, TextConfig& t, const std::string& file)
{
    MoeConfig& m = t.moe;
    m.router = RouterKind::GemmaScaled;
    m.experts = text.integer("num_experts", 128, 1, 1 << 16);
    m.topK = text.integer("top_k_experts", 8, 1, 1 << 16);
    m.intermediate = text.integer("moe_intermediate_size", 704, 1);
    if (m.topK > m.experts)
        refuse(file, "top_k_experts", std::to_string(m.topK) + " is more than the " + std::to_string(m.experts) + " experts");
    m.normTopK = true;
    m.geluExperts = true;
    m.routerNormEps = t.rmsEps;
    m.names.router = "router.proj.weight";
    m.names.routerScale = "router.scale";
    m.names.expertScale = "router.per_expert_scale";
    m.sparseLayers.assign(static_cast<size_t>(t.layers), true);
}

void gemmaTextDefaults(TextConfig& t)
{
    t.mropeSection.clear(); // 1-D: no sections of its own; a 3-axis scheme run on it takes its defaults
    t.tieEmbeddings = true;
    t.attentionBias = false;
    t.rmsEps = 1e-6;
    t.ropeTheta = 1e4;
    t.slidingWindow = 512;
}

void readGemma4Text(const Reader& text, const Reader&, TextConfig& t, const std::string& file)
{
    readGemmaCommon(text, t, file);
    t.valueNorm = true;
    t.layerScalar = true;
    t.attentionScale = 1.0; // q_norm and k_norm carry the scale
    t.explicitHeadDim = text.integer("head_dim", 256, 2, 1 << 16);
    const std::string bidirectional = text.text("use_bidirectional_attention", "");
    if (bidirectional == "all")
        refuse(file, "use_bidirectional_attention", "'all' makes an encoder (every token sees every other), not a VLM RopeScope runs");
    if (!bidirectional.empty() && bidirectional != "vision")
        refuse(file, "use_bidirectional_attention", "'" + bidirectional + "' is not vision, all or null");
    t.imageBlocks = bidirectional == "vision" ? ImageBlocks::SlidingLayers : ImageBlocks::None;
    if (text.has("per_layer_config"))
        refuse(file, "per_layer_config", "is not read by RopeScope; give global_head_dim and num_global_key_value_heads instead");
    const Reader rope = text.object("rope_parameters");
    LayerKind sliding;
    readKindRope(rope, "sliding_attention", 1e4, sliding, file);
    if (sliding.proportional || sliding.linearFactor != 1.0)
        refuse(file, "rope_parameters.sliding_attention", "scales its frequencies; Gemma 4's sliding layers run the default rope");
    t.ropeTheta = sliding.theta;
    LayerKind& f = t.full;
    f.theta = 1e6;
    f.proportional = true;
    f.rotaryFraction = 0.25;
    if (rope.has("full_attention"))
        readKindRope(rope, "full_attention", 1e6, f, file);
    f.headDim = text.integer("global_head_dim", 512, 2, 1 << 16);
    f.keyIsValue = text.boolean("attention_k_eq_v", false);
    // transformers overrides the full layers' kv heads only under attention_k_eq_v.
    f.kvHeads = f.keyIsValue ? text.integer("num_global_key_value_heads", t.kvHeads, 1, 1024) : t.kvHeads;
    t.perLayerInput = text.integer("hidden_size_per_layer_input", 256, 0, 1 << 16);
    t.perLayerVocab = text.integer("vocab_size_per_layer_input", 262144, 1);
    t.kvSharedLayers = text.integer("num_kv_shared_layers", 0, 0, t.layers);
    t.doubleWideMlp = text.boolean("use_double_wide_mlp", false);
    if (text.boolean("enable_moe_block", false))
        readGemma4Moe(text, t, file);
}

void readGemma3Text(const Reader& text, const Reader& root, TextConfig& t, const std::string& file)
{
    readGemmaCommon(text, t, file);
    t.zeroCentredNorm = true; // Gemma3RMSNorm multiplies by 1 + w
    t.explicitHeadDim = text.integer("head_dim", 256, 2, 1 << 16);
    t.attentionScale = 1.0 / std::sqrt(text.number("query_pre_attn_scalar", 256, 1e-6, 1e9));
    if (text.boolean("use_bidirectional_attention", false))
        refuse(file, "use_bidirectional_attention", "true makes an encoder (EmbeddingGemma), not a VLM RopeScope runs");
    t.imageBlocks = ImageBlocks::AllLayers;
    LayerKind sliding, &f = t.full;
    if (text.has("rope_parameters")) { // transformers 5: one entry per layer type
        const Reader rope = text.object("rope_parameters");
        readKindRope(rope, "sliding_attention", 1e4, sliding, file);
        readKindRope(rope, "full_attention", 1e6, f, file);
    } else { // the Hub's transformers-4 form: rope_scaling applies to the full layers, rope_local_base_freq to sliding ones
        sliding.theta = text.number("rope_local_base_freq", 1e4, 1.0 + 1e-9, 1e30);
        f.theta = text.number("rope_theta", root.number("rope_theta", 1e6, 1.0 + 1e-9, 1e30), 1.0 + 1e-9, 1e30);
        const Reader scaling = text.has("rope_scaling") ? text.object("rope_scaling") : root.object("rope_scaling");
        const std::string type = scaling.text("rope_type", scaling.text("type", "default"));
        if (type != "default" && type != "linear")
            refuse(file, "rope_scaling.rope_type", "'" + type + "' is not one RopeScope applies to Gemma 3 (default, linear)");
        f.linearFactor = type == "linear" ? scaling.number("factor", 1.0, 1e-6, 1e6) : 1.0;
    }
    if (sliding.proportional || f.proportional || sliding.linearFactor != 1.0)
        refuse(file, "rope_parameters", "Gemma 3 scales only its full layers' frequencies, linearly");
    t.ropeTheta = sliding.theta;
    f.headDim = t.headDim();
    f.kvHeads = t.kvHeads;
}

void checkGemmaShapes(const TextConfig& t, const std::string& file)
{
    LayerKind sliding;
    sliding.headDim = t.headDim();
    sliding.kvHeads = t.kvHeads;
    checkKind(sliding, "head_dim", t.heads, file);
    checkKind(t.full, "global_head_dim", t.heads, file);
    if (std::count(t.slidingLayers.begin(), t.slidingLayers.end(), false) == 0)
        refuse(file, "layer_types", "has no full_attention layer");
    for (int i = 0; i < t.layers; ++i)
        if (t.kvSharedLayers > 0 && i >= t.layers - t.kvSharedLayers && t.kvSourceLayer(i) < 0)
            refuse(file, "num_kv_shared_layers",
                   std::to_string(t.kvSharedLayers) + " leaves layer " + std::to_string(i) +
                       " no earlier layer of its type to share keys and values with");
    if (t.perLayerInput > 0 && int64_t(t.perLayerInput) * t.layers > (1 << 30))
        refuse(file, "hidden_size_per_layer_input", "x num_hidden_layers is over 2^30");
}

void readGemma4Vision(const Reader& v, ModelConfig& c, const std::string& file)
{
    VisionConfig& vc = c.vision;
    vc.depth = v.integer("num_hidden_layers", 16, 1, 1024);
    vc.width = v.integer("hidden_size", 768, 1);
    vc.heads = v.integer("num_attention_heads", 12, 1, 1024);
    if (v.integer("num_key_value_heads", vc.heads, 1, 1024) != vc.heads)
        throw BadInputFile(file + ": vision_config.num_key_value_heads differs from num_attention_heads; Gemma 4's tower has none fewer");
    vc.explicitHeadDim = v.integer("head_dim", 64, 4, 4096);
    vc.mlpHidden = v.integer("intermediate_size", 3072, 1);
    vc.patchSize = v.integer("patch_size", 16, 1, 1024);
    vc.act = v.text("hidden_activation", v.text("hidden_act", "gelu_pytorch_tanh"));
    vc.normEps = v.number("rms_norm_eps", 1e-6, 1e-30, 1.0);
    vc.poolingKernel = v.integer("pooling_kernel_size", 3, 1, 64);
    vc.mergeSize = vc.poolingKernel;
    vc.positionTableSide = v.integer("position_embedding_size", 10240, 1, 1 << 20);
    vc.ropeTheta = v.object("rope_parameters").number("rope_theta", 100.0, 1.0 + 1e-9, 1e30);
    vc.standardize = v.boolean("standardize", false);
    vc.clippedLinears = v.boolean("use_clipped_linears", false);
    if (v.boolean("attention_bias", false))
        throw BadInputFile(file + ": vision_config.attention_bias true: Gemma 4's tower has no attention biases");
    vc.temporalPatch = 1;
    vc.rasterPatches = true;
    vc.outHidden = c.text.hidden;
}

void readGemma3Vision(const Reader& v, ModelConfig& c, const std::string& file)
{
    VisionConfig& vc = c.vision;
    vc.depth = v.integer("num_hidden_layers", 27, 1, 1024);
    vc.width = v.integer("hidden_size", 1152, 1);
    vc.heads = v.integer("num_attention_heads", 16, 1, 1024);
    vc.mlpHidden = v.integer("intermediate_size", 4304, 1);
    vc.patchSize = v.integer("patch_size", 14, 1, 1024);
    vc.imageSize = v.integer("image_size", 896, 1, 1 << 16);
    vc.inChannels = v.integer("num_channels", 3, 1, 16);
    vc.act = v.text("hidden_act", "gelu_pytorch_tanh");
    vc.normEps = v.number("layer_norm_eps", 1e-6, 1e-30, 1.0);
    if (v.boolean("vision_use_head", false))
        throw BadInputFile(file + ": vision_config.vision_use_head true: Gemma 3's tower has no attention-pooling head");
    vc.temporalPatch = 1;
    vc.rasterPatches = true;
    vc.outHidden = c.text.hidden;
    const int side = vc.imageSize / vc.patchSize;
    if (side < 1 || vc.imageSize % vc.patchSize != 0)
        throw BadInputFile(file + ": vision_config.image_size " + std::to_string(vc.imageSize) + " is not a multiple of patch_size " +
                           std::to_string(vc.patchSize));
    vc.positionEmbeddings = side * side;
}

// Gemma 3's mm_tokens_per_image: a square number whose side divides the tower's patches a side (the average pool).
void readGemma3Tokens(const Reader& root, ModelConfig& c)
{
    c.imageToken = root.integer("image_token_index", root.integer("image_token_id", 262144));
    c.visionStart = root.integer("boi_token_index", root.integer("boi_token_id", 255999));
    c.visionEnd = root.integer("eoi_token_index", root.integer("eoi_token_id", 256000));
    c.videoToken = -1; // Gemma 3 takes no video
    VisionConfig& vc = c.vision;
    vc.tokensPerImage = root.integer("mm_tokens_per_image", 256, 1, 1 << 20);
    const int tokensSide = static_cast<int>(std::lround(std::sqrt(double(vc.tokensPerImage))));
    const int patchSide = vc.imageSize / vc.patchSize;
    if (tokensSide * tokensSide != vc.tokensPerImage || patchSide % tokensSide != 0)
        throw BadInputFile(root.where() + ": mm_tokens_per_image " + std::to_string(vc.tokensPerImage) +
                           " is not a square whose side divides the " + std::to_string(patchSide) + " patches a side");
    vc.mergeSize = patchSide / tokensSide;
}

void readGemma4Tokens(const Reader& root, ModelConfig& c)
{
    c.imageToken = root.integer("image_token_id", 258880);
    c.videoToken = root.integer("video_token_id", 258884);
    c.audioToken = root.integer("audio_token_id", 258881);
    c.visionStart = root.integer("boi_token_id", 255999);
    c.visionEnd = root.integer("eoi_token_id", 258882);
    c.vision.tokensPerImage = root.integer("vision_soft_tokens_per_image", 280, 1, 1 << 20);
}

} // namespace ropescope::model

#pragma once
#include "core/geometry/frequency.h"
#include "core/geometry/scheme_kind.h"
#include "core/model/engine/safetensors.h"

#include <QString>

#include <string>
#include <vector>

namespace ropescope::model {

// GlmV: GLM-4.1V-9B-Thinking and GLM-4.6V-Flash (model_type glm4v / glm46v, one architecture).
// PaddleOcrVl: PaddleOCR-VL (ERNIE-4.5-0.3B with Qwen2-VL's M-RoPE, a SigLIP-NaViT vision tower).
// Gemma3 and Gemma4: the 1-D families (every token, image tokens included, at its sequence index), whose layers are
// sliding-window or full attention, each kind with its own rotary (model_config_gemma.cpp).
enum class Architecture { Qwen2VL, Qwen25VL, Qwen3VL, Qwen35, GlmV, PaddleOcrVl, Gemma3, Gemma4 };

inline bool isGemma(Architecture a)
{
    return a == Architecture::Gemma3 || a == Architecture::Gemma4;
}

// Architectures whose image (and video-frame) pads are told apart only by mm_token_type_ids, which their
// runs therefore need (transformers silently falls back to 1-D positions without it).
inline bool needsTokenTypes(Architecture a)
{
    return a == Architecture::GlmV || a == Architecture::PaddleOcrVl;
}

// Qwen3-VL and Qwen3.5 share the vision tower, the processor, the chat template and the positions.
inline bool hasQwen3Vision(Architecture a)
{
    return a == Architecture::Qwen3VL || a == Architecture::Qwen35;
}

// Architectures whose processor writes every temporal patch of a video as its own run of pad tokens,
// separated by timestamp text (Qwen3-VL, Qwen3.5, GLM-V): each is placed as a one-frame grid.
inline bool separatesVideoFrames(Architecture a)
{
    return hasQwen3Vision(a) || a == Architecture::GlmV || a == Architecture::Gemma4;
}

// The name config.json gives the architecture (model_type).
const char* architectureName(Architecture architecture);

struct VisionConfig {
    int depth = 32;
    int width = 1280; // Qwen2-VL embed_dim, Qwen2.5-VL hidden_size
    int heads = 16;
    int mlpHidden = 5120; // Qwen2-VL embed_dim * mlp_ratio, Qwen2.5-VL intermediate_size
    int outHidden = 1536; // merger output = the decoder's hidden size
    int patchSize = 14;
    int temporalPatch = 2;
    int mergeSize = 2;
    int inChannels = 3;
    std::string act = "quick_gelu";
    // Qwen2.5-VL only
    std::vector<int> fullAttentionBlocks;
    int windowSize = 112;
    double tokensPerSecond = 2;
    // Qwen3-VL only: the learned position table (a side x side grid resampled to each image) and the
    // vision blocks whose output also goes through a DeepStack merger into the decoder's early layers.
    int positionEmbeddings = 0;
    std::vector<int> deepstackBlocks;
    // GLM-V: RMSNorms of this eps, a qkv bias only when attention_bias, blocks whose MLP is outHidden wide
    // (mlpHidden), and after the blocks a 2x2 Conv2d downsample and a gated merger of mergerHidden.
    // PaddleOCR-VL: the encoder's LayerNorm eps; patches flattened in raster order (Qwen and GLM-V: merge
    // window by merge window).
    double normEps = 1e-6;
    bool rasterPatches = false;
    bool attentionBias = true;
    int mergerHidden = 0;

    // Gemma 4's tower: head_dim as given, the (x, y) position table's side, k x k pooling of the patches into soft
    // tokens, the 2-D rotary's theta, soft tokens standardised by std_bias / std_scale, clipped linears (E2B/E4B).
    // Gemma 3's SigLIP: image_size / patch_size patches a side, pooled to tokensPerImage soft tokens.
    int explicitHeadDim = 0;
    int poolingKernel = 0;
    int positionTableSide = 0;
    double ropeTheta = 100;
    bool standardize = false;
    bool clippedLinears = false;
    int imageSize = 0;
    int tokensPerImage = 0;

    int positionGridSide() const;

    int headDim() const { return explicitHeadDim > 0 ? explicitHeadDim : width / heads; }
    int patchDim() const { return inChannels * temporalPatch * patchSize * patchSize; }
};

// A decoder whose MLP is a mixture of experts (qwen3_5_moe, qwen3_vl_moe, glm4v_moe). Qwen routes by a softmax
// over the experts, top-k, renormalised; GLM by sigmoid scores whose choice (not weight) adds a correction bias,
// within the best topkGroup of nGroups groups, renormalised and scaled. Each layer is sparse or dense (the
// config's mlp_only_layers / decoder_sparse_step / first_k_dense_replace); dense layers keep the plain MLP.
// Gemma 4 (26B-A4B): a softmax over proj(rmsnorm(x) * scale / sqrt(hidden)), top-k renormalised, then each chosen
// weight times its expert's per_expert_scale.
enum class RouterKind { Softmax, SigmoidGrouped, GemmaScaled };

// What a family names the parts of its mixture (its row of kFamilies, model_config.cpp): tensors under a sparse
// layer's "model.layers.{i}.mlp.", and the config key that sizes the shared expert. Every family's experts are read
// in either layout, whichever the checkpoint holds: per expert (experts.{e}.gate_proj.weight, up_proj, down_proj)
// or fused (experts.gate_up_proj, experts.down_proj). An empty name: the family has no such part.
struct MoeNames {
    const char* router = "gate.weight";
    const char* correctionBias = ""; // GLM: added to the scores that choose (loaded where named)
    // The shared expert's gate_proj, up_proj and down_proj (".weight") are under this prefix. A family without one
    // names where it would be all the same: a checkpoint that holds it while the config has none is refused.
    const char* sharedExpert = "";
    const char* sharedGate = "";  // Qwen3.5: the shared expert's output scaled by sigmoid(x . this)
    const char* sharedKey = "";   // the config key that sizes the shared expert; empty: the family has none
    const char* routerScale = ""; // Gemma 4: the router input's per-channel scale [hidden]
    const char* expertScale = ""; // Gemma 4: each expert's weight scale [experts]
};

struct MoeConfig {
    int experts = 0; // routed experts; 0: a dense decoder
    int topK = 0;
    int intermediate = 0;          // each routed expert's SwiGLU width
    int sharedIntermediate = 0;    // the shared expert's width; 0: none
    bool sharedExpertGate = false; // Qwen3.5: the shared expert's output scaled by sigmoid(shared_expert_gate(x))
    RouterKind router = RouterKind::Softmax;
    bool normTopK = true;
    double routedScaling = 1.0;
    int groups = 1, topkGroup = 1;  // GLM: experts in `groups` groups, the choice within the best `topkGroup`
    std::vector<bool> sparseLayers; // per decoder layer
    MoeNames names;                 // the family's, from its row
    bool geluExperts = false;       // Gemma 4: the experts' gate is gelu-tanh (the others' silu)
    double routerNormEps = 1e-6;    // Gemma 4: the router's weightless RMSNorm

    bool any() const { return experts > 0; }
    bool isSparse(int layer) const { return any() && sparseLayers[static_cast<size_t>(layer)]; }
    int sparseCount() const;
};

// One kind of attention layer (Gemma: sliding and full layers differ in all of these).
struct LayerKind {
    int headDim = 0, kvHeads = 0;
    double theta = 1e4;
    double rotaryFraction = 1.0;
    // Gemma 4's "proportional" rotary: the rotated pairs' frequencies are theta^(-2i / headDim) over the whole head,
    // i < headDim * fraction / 2, and every other pair has frequency 0 (turns by nothing): the rotated dims are
    // 0..r/2-1 and d/2..d/2+r/2-1 of the half split, not the first r dims as partial rotary's.
    bool proportional = false;
    double linearFactor = 1.0; // Gemma 3's full layers: frequencies / factor ("linear" rope scaling)
    bool keyIsValue = false;   // Gemma 4's attention_k_eq_v on full layers: V is k_proj's output (no v_proj)
    int window = 0;            // sliding: a query sees the keys of the `window` positions up to itself; 0: all

    int rotaryDim() const { return static_cast<int>(headDim * rotaryFraction); }
    // The pairs that turn: rotaryDim() / 2, of headDim / 2 pairs in the tables (proportional), or of rotaryDim() / 2.
    int tablePairs() const { return proportional ? headDim / 2 : rotaryDim() / 2; }
};

// Which image (and video-frame) tokens attend to each other both ways, within a run of them (a block).
enum class ImageBlocks { None, SlidingLayers, AllLayers };

struct TextConfig {
    int hidden = 1536;
    int intermediate = 8960;
    int layers = 28;
    int heads = 12;
    int kvHeads = 2;
    int vocab = 151936;
    double rmsEps = 1e-6;
    double ropeTheta = 1e6;
    std::vector<int> mropeSection{16, 24, 24};
    // Qwen3-VL's MRoPE-I: the sections are spread over the frequencies (FrequencyAllocation::InterleavedMrope).
    bool mropeInterleaved = false;
    bool tieEmbeddings = false;
    int explicitHeadDim = 0;   // head_dim when the config gives one (Qwen3: not hidden / heads)
    bool attentionBias = true; // q/k/v biases (Qwen2); Qwen3 has none
    bool qkNorm = false;       // Qwen3: RMSNorm over each head of q and k before the rotation
    // Qwen3.5: RMSNorm weights stored zero-centred (the norm multiplies by 1 + w); a sigmoid gate on each
    // attention head's output (q_proj holds query and gate per head); only the first rotaryFraction of each
    // head's dims rotate (partial_rotary_factor), the rest pass through.
    bool zeroCentredNorm = false;
    bool attentionOutputGate = false;
    double rotaryFraction = 1.0;
    // GLM-V: the rotated dims pair as (2j, 2j+1); four RMSNorms per layer (each sublayer's output is normed
    // before the residual add); the MLP's gate and up projections are one fused gate_up_proj.
    geometry::RotaryPairing pairing = geometry::RotaryPairing::Half;
    bool sandwichNorms = false;
    bool fusedGateUp = false;
    // Qwen3.5's hybrid decoder: per layer, whether its token mixer is a Gated DeltaNet (linear attention,
    // no positions) instead of softmax attention. Empty: every layer attends.
    std::vector<bool> linearLayers;
    int linearKeyHeads = 0, linearKeyDim = 0, linearValueHeads = 0, linearValueDim = 0, convKernel = 4;
    MoeConfig moe;
    // Gemma (model_config_gemma.cpp). Layers are sliding or full: the fields above (head_dim, kv heads, theta) are
    // the sliding layers', `full` the full layers'; empty slidingLayers: every layer is of the fields' kind.
    std::vector<bool> slidingLayers;
    int slidingWindow = 0;
    LayerKind full;
    bool gemmaNorms = false;       // four norms a layer: input, post_attention, pre_feedforward, post_feedforward
    bool geluMlp = false;          // gelu_pytorch_tanh(gate) * up instead of silu
    bool scaledEmbeddings = false; // embeddings x sqrt(hidden) (as a float32 scalar, as transformers does)
    double attentionScale = 0;     // scores x this; 0: 1 / sqrt(head_dim)
    bool valueNorm = false;        // Gemma 4: RMSNorm without weight over each head of v
    bool layerScalar = false;      // Gemma 4: each layer's output x its layer_scalar
    double finalSoftcap = 0;       // logits = cap * tanh(logits / cap); 0: none
    ImageBlocks imageBlocks = ImageBlocks::None;
    // Gemma 4 E2B / E4B: a per-layer input of this width per token (0: none) from its own embedding table,
    // the last kvSharedLayers layers reuse the keys and values of the last earlier layer of their kind, and those
    // layers' MLPs are twice as wide (doubleWideMlp).
    int perLayerInput = 0;
    int perLayerVocab = 0;
    int kvSharedLayers = 0;
    bool doubleWideMlp = false;

    bool isSliding(int layer) const { return !slidingLayers.empty() && slidingLayers[static_cast<size_t>(layer)]; }
    // The layer's attention shape and rotary: the fields' (sliding, or every layer) or `full`.
    LayerKind layerKind(int layer) const;
    // 0 for every layer of the fields' kind, 1 for a Gemma full layer: rotary tables are made once per kind.
    int kindIndex(int layer) const { return !slidingLayers.empty() && !isSliding(layer) ? 1 : 0; }
    // Gemma 4 E-series: the layer whose keys and values a KV-shared layer reuses; -1 for a layer with its own.
    int kvSourceLayer(int layer) const;
    int mlpWidth(int layer) const;

    int headDim() const { return explicitHeadDim > 0 ? explicitHeadDim : hidden / heads; }
    int rotaryDim() const { return static_cast<int>(headDim() * rotaryFraction); } // int(), as transformers truncates
    bool isLinear(int layer) const { return !linearLayers.empty() && linearLayers[static_cast<size_t>(layer)]; }
    std::vector<int> attentionLayers() const; // the layers with softmax attention (all but the DeltaNet ones)
};

// The attention layers in words: "3, 7", or "0-27" when every layer attends.
std::string attentionLayerList(const TextConfig& text);

// "MoE: 8 experts, top-2 (+1 shared), layers 0, 2 sparse": the mixture in one line; empty for a dense decoder.
std::string moeNote(const TextConfig& text);

// What a scheme does to a hybrid decoder (Qwen3.5), in one sentence for summaries and the window's status;
// empty when every layer attends.
std::string hybridNote(const TextConfig& text);

struct ModelConfig {
    Architecture architecture = Architecture::Qwen2VL;
    // config.json's model_type as given: the MoE members run as their dense sibling's architecture
    // (qwen3_5_moe as Qwen35, qwen3_vl_moe as Qwen3VL, glm4v_moe as GlmV) with TextConfig::moe set.
    std::string modelType;
    TextConfig text;
    VisionConfig vision;
    int imageToken = 151655;
    int videoToken = 151656;
    int visionStart = 151652;
    int visionEnd = 151653;
    // GLM-V wraps videos in these around their per-frame image spans (<|begin_of_video|>, <|end_of_video|>);
    // -1 for Qwen, whose videos share <|vision_start|> / <|vision_end|>.
    int videoStart = -1;
    int videoEnd = -1;
    bool glm46 = false;
    // Gemma: the image's begin / end markers (boi, eoi) and the audio token a run refuses.
    int audioToken = -1; // model_type glm46v: GLM-4.6V's chat template ("{t:.1f} seconds" after each video frame)
    int eos = 151645;
    // HARoPE: per-head matrices in the checkpoint (see model README); detected at load.
    bool harope = false;
};

// The built-in scheme that places tokens as the model was trained: glm-v for GLM-V, mrope for Qwen (whose
// runs take the model's own allocation, MRoPE-I's interleaving for Qwen3-VL, from its config).
inline geometry::SchemeKind ownSchemeKind(const ModelConfig& config)
{
    if (isGemma(config.architecture))
        return geometry::SchemeKind::Hard; // 1-D: every token at its index
    return config.architecture == Architecture::GlmV ? geometry::SchemeKind::GlmV : geometry::SchemeKind::Mrope;
}

// Reads config.json in its Hub forms: flat Qwen2-VL / Qwen2.5-VL configs with rope_scaling.mrope_section,
// the newer nesting with text_config / vision_config, rope_scaling or rope_parameters (transformers 5),
// Qwen3-VL (qwen3_vl), Qwen3.5, GLM-V, PaddleOCR-VL and the MoE members (qwen3_5_moe, qwen3_vl_moe,
// glm4v_moe; a router setting RopeScope does not apply is refused naming its key). Throws ModelError naming
// the file and the key.
ModelConfig loadModelConfig(const QString& path);
ModelConfig parseModelConfig(const QByteArray& json, const QString& name);

} // namespace ropescope::model

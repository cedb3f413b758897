#pragma once
#include "core/geometry/position_table.h"
#include "core/model/engine/checkpoint.h"
#include "core/model/engine/gated_deltanet.h"
#include "core/model/engine/moe_block.h"
#include "kernels/attention.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <vector>

namespace ropescope::model {

// Rotary tables of one layer's positions (cos, sin [L, head_dim]).
struct LayerRotary {
    at::Tensor cos, sin;
};

// Per-layer cache for greedy decoding: keys and values [1, kv_heads, T, head_dim] of the attention layers,
// the conv columns and delta-rule state of the DeltaNet layers (Qwen3.5).
// The cache grows by concatenation, or, once made fixed (makeFixed), holds `capacity` slots per layer and writes
// each decoding step's key and value at `slot`: the same shapes and addresses at every step, what a CUDA graph
// replays.
struct KvCache {
    std::vector<at::Tensor> keys, values;
    std::vector<DeltaNetState> deltaNet;
    int64_t tokens = 0; // the sequence so far
    int64_t length() const { return tokens; }

    at::Tensor slot;  // fixed: int64 [1] on the device, the position the next token is written at (= tokens)
    at::Tensor slots; // fixed: int64 [capacity], 0 .. capacity - 1
    bool fixed() const { return slot.defined(); }
    // Moves the keys and values into buffers of `capacity` positions (the tokens so far first) on their device.
    void makeFixed(int64_t capacity);
};

// What to keep from one forward pass besides the logits.
struct DecoderCapture {
    std::vector<int> layers;             // layers whose attention to keep (empty: none)
    kernels::CaptureSelection selection; // query rows x key columns (empty: all)
    bool layerOutputs = false;           // residual stream after every layer
    // Logits of every position ([L, vocab]); otherwise only the last row, which is all generation needs
    // (at a 152k vocabulary the full projection costs more than the decoder for ~1000 tokens).
    bool allLogits = false;
    // At the captured layers, also the mean query and key over the pass's tokens, as they enter the rotary
    // (after q/k norms and HARoPE maps): what the model's own positional prior is computed from.
    bool meanQueryKey = false;
    // At the captured layers, also each layer's attention output per head and the values it mixed (what
    // gradient relevancy needs: dy/dA = (dy/dcontext) v^T). Kept in the autograd graph when grad is on.
    bool contexts = false;
    // Qwen3.5: each DeltaNet layer's g, beta and delta-rule output (DeltaNetTrace), and its state at the
    // end of the pass.
    bool deltaNet = false;
    // MoE decoders: each sparse layer's router choice (RouterTrace), for the fixtures' router tensors and the
    // expert-usage view. Small: [L, experts] per layer.
    bool routers = false;
};

struct DecoderOutput {
    at::Tensor logits;                    // [L, vocab], or [1, vocab] for the last token
    at::Tensor finalNorm;                 // [L, hidden]
    std::vector<at::Tensor> layerOutputs; // [L, hidden] per layer
    std::vector<at::Tensor> attentions;   // per captured layer: [heads, rows, cols]
    // With meanQueryKey, per captured layer: [heads, d] and [key heads, d] (key heads: the KV heads, or the
    // query heads where keys are repeated per query head: HARoPE, per-head rotary on few KV heads).
    std::vector<at::Tensor> meanQueries, meanKeys;
    // With contexts, per captured layer: [heads, L, d] each (values repeated to the query heads).
    std::vector<at::Tensor> contexts, values;
    // With deltaNet, per DeltaNet layer in layer order.
    std::vector<DeltaNetTrace> deltaTraces;
    std::vector<DeltaNetState> deltaStates;
    // With routers, per sparse layer in layer order.
    std::vector<RouterTrace> routers;
    // With layerOutputs, Gemma E2B / E4B: every layer's per-layer input [B, L, layers, width].
    at::Tensor perLayerInputs;
};

// DeepStack (Qwen3-VL): feature k [positions, hidden] is added to the residual stream at the image-token
// positions after decoder layer k. Only the prompt's pass carries it; generated tokens are text.
struct DeepStackInput {
    at::Tensor positions;             // int64 token indices of the image tokens
    std::vector<at::Tensor> features; // one per early layer: [positions, hidden], or [B, positions, hidden]
};

// What a Gemma prompt adds to its embeddings (GemmaInputs): each token's image block, -1 for text (the tokens of a
// block attend to each other both ways where the model says so), and the ids its per-layer inputs are looked up
// by (E2B / E4B; image slots as the pad id). Either may be undefined.
struct GemmaInputs {
    at::Tensor blockIds;    // int64 [L] over the prompt's positions
    at::Tensor perLayerIds; // int64 [L] (or [B, L]) of this pass's tokens
};

// Rotary tables for a position table: the table's own allocation, the model's theta and head_dim.
// Rows [from, from + count) of the table, or, past its end, positions that continue it at max + 1 + offset
// on every component (decoding).
LayerRotary rotaryForTable(const geometry::PositionTable& table, const TextConfig& text, c10::Device device, int64_t from, int64_t count,
                           double offset = 0);
// The same for one kind of layer (Gemma: sliding or full, each with its theta, head_dim and frequencies).
LayerRotary rotaryForTable(const geometry::PositionTable& table, const TextConfig& text, const LayerKind& kind, c10::Device device,
                           int64_t from, int64_t count, double offset = 0);

// The Qwen2 / Qwen3 / Qwen3.5 decoder (RMSNorm, grouped-query attention with q/k/v biases (Qwen2) or per-head q/k
// RMSNorm (Qwen3), SwiGLU, DeepStack additions (Qwen3-VL)) driven by a rotary table per layer, so any position scheme (and an AGE schedule) feeds the real model. HARoPE head maps are
// applied to q and k when the checkpoint carries them:
//   model.layers.{i}.self_attn.harope.a_u [heads, d, d], .a_v [heads, d, d], .sigma [heads, d]
//   M_h = U diag(softplus(sigma) + 1e-6) V^T, U = exp(A_u - A_u^T), V = exp(A_v - A_v^T);
//   q' = M_h q, k' = M_h^{-T} k (per query head), then rotary.
// Qwen3.5 is hybrid: layers the config marks linear mix tokens with a Gated DeltaNet (no positions: their
// rotary entry is unused), the others attend with a sigmoid output gate and partial rotary; norms multiply
// by 1 + w. Captured layers must be attention layers (TextConfig::attentionLayers).
class LanguageModel {
public:
    LanguageModel(const Checkpoint& checkpoint, c10::Device device, c10::ScalarType dtype = c10::kFloat);

    at::Tensor embed(const at::Tensor& ids) const; // [L] -> [L, hidden]
    // The same for ids already on the model's device and known to be in range (a greedy step's argmax): no
    // check, so no read back to the host.
    at::Tensor embedInRange(const at::Tensor& ids) const;
    // Runs `embeds` [L, hidden] (or a batch [B, L, hidden] sharing one layout, without cache) after
    // whatever `cache` holds (appending to it when given). A fixed cache takes one token per call.
    // Layer outputs in the capture are each layer's own, before a DeepStack addition.
    DecoderOutput forward(const at::Tensor& embeds, const std::vector<LayerRotary>& rotary, KvCache* cache, const DecoderCapture& capture,
                          const DeepStackInput* deepstack = nullptr, const GemmaInputs* gemma = nullptr) const;
    int layers() const { return static_cast<int>(layers_.size()); }
    // A sparse layer's mixture of experts (null for a dense layer): what `bench model` times on its own.
    const MoeWeights* moe(int layer) const
    {
        return layers_[static_cast<size_t>(layer)].moe.defined() ? &layers_[static_cast<size_t>(layer)].moe : nullptr;
    }
    const at::Tensor& lmHead() const { return lmHead_; } // [vocab, hidden]; the embedding when tied

    // Every weight under its checkpoint name (a tied head appears once, as the embedding; HARoPE
    // parameters when present).
    std::vector<std::pair<std::string, at::Tensor*>> weights();
    // Gives every layer HARoPE parameters with M = I (the model is unchanged until they train).
    void addIdentityHarope();
    bool hasHarope() const { return !layers_.empty() && layers_[0].haropeAu.defined(); }

private:
    struct Layer {
        at::Tensor inNorm, postNorm;
        at::Tensor qW, qB, kW, kB, vW, vB, oW;
        at::Tensor qNorm, kNorm; // Qwen3: [head_dim]
        at::Tensor gateW, upW, downW;
        at::Tensor gateUpW;                         // GLM-V: gate and up fused, [2 * intermediate, hidden]
        at::Tensor postAttnNorm, postMlpNorm;       // GLM-V: each sublayer's output normed before the add
        at::Tensor haropeAu, haropeAv, haropeSigma; // stored parameters, when present
        at::Tensor haropeM, haropeMInvT;            // [heads, d, d], built from them
        bool linear = false;                        // a Gated DeltaNet layer (Qwen3.5)
        DeltaNetWeights deltaNet;
        MoeWeights moe; // a sparse layer of a MoE decoder: its MLP is this mixture (the dense MLP tensors are absent)
        // Gemma: the layer's kind (head size, KV heads, window, k = v), the layer whose keys and values it reuses (-1:
        // its own), its layer_scalar and its per-layer input's gate, projection and norm (E2B / E4B).
        LayerKind kind;
        int kvSource = -1;
        at::Tensor layerScalar;
        at::Tensor perLayerGateW, perLayerProjectionW, perLayerNorm;
        // Gemma 4 26B-A4B: the experts' input norm and the two branches' output norms (dense MLP, experts).
        at::Tensor moePreNorm, moeDenseNorm, moeExpertsNorm;
    };
    // One pass's state that every layer reads or adds to (forward).
    struct Pass;
    // Each per-layer tensor once: its name under model.layers.{i}., where it lives, its shape, and whether a
    // checkpoint of this config has it (biases: Qwen2; q/k norms: Qwen3; HARoPE maps when recorded).
    struct LayerTensor {
        const char* name;
        at::Tensor Layer::*member;
        std::vector<int64_t> shape;
        bool present;
    };
    std::vector<LayerTensor> layerTensors(int layer, bool harope, bool linear, bool sparse) const;
    std::vector<LayerTensor> gemmaLayerTensors(int layer) const;
    struct DeltaNetTensor {
        const char* name;
        at::Tensor DeltaNetWeights::*member;
        std::vector<int64_t> shape;
    };
    std::vector<DeltaNetTensor> deltaNetTensors() const;
    at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& w) const;
    at::Tensor attend(const Layer& l, size_t index, const at::Tensor& hn, const LayerRotary& r, Pass& pass) const;
    // Keys and values of the pass joined with the cache's (and stored there), or a KV-shared layer's source's.
    std::pair<at::Tensor, at::Tensor> cachedKeysValues(const Layer& l, size_t index, at::Tensor k, at::Tensor v, Pass& pass) const;
    // One layer on the residual stream: its token mixer, MLP (or experts) and, for Gemma, per-layer input and scalar.
    at::Tensor decoderLayer(const Layer& l, size_t index, const at::Tensor& x, const LayerRotary& r, Pass& pass,
                            const at::Tensor& perLayerInput) const;
    // Gemma E2B / E4B: each layer's [.., L, per-layer width] input from the ids and the embeddings ([.., L, layers, width]).
    at::Tensor perLayerInputs(const at::Tensor& ids, const at::Tensor& embeds) const;
    at::Tensor embeddingScale() const; // Gemma: sqrt(hidden) in the weights' dtype

    at::Tensor mlp(const Layer& l, const at::Tensor& x, RouterTrace* router) const;
    // Gemma 4 26B-A4B: the dense MLP and the experts side by side, the experts routed on the residual stream x.
    at::Tensor gemmaMixture(const Layer& l, const at::Tensor& x, RouterTrace* router) const;

    TextConfig cfg_;
    c10::Device device_;
    // Adjacent pairing (GLM-V): the head dims reordered so frequency j's pair (2j, 2j+1) sits at (j, j + r/2),
    // where the half-split rotation turns it. q_proj and k_proj rows are permuted alike at load, so every
    // score is unchanged; the captured mean queries and keys are in this order. Undefined for the half split.
    at::Tensor pairOrder_;
    void permuteToHalfSplit();
    at::Tensor embedding_, finalNorm_, lmHead_;
    at::Tensor perLayerEmbedding_, perLayerModelProjection_, perLayerProjectionNorm_; // Gemma E2B / E4B
    std::vector<Layer> layers_;
};

} // namespace ropescope::model

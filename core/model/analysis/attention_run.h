#pragma once
// One question about one image (or several) under a position scheme, run through a VLM with its text -> image attention
// captured: the one pipeline behind `attend`, batch attention items, `eval` and the GUI's Attention tab,
// so all of them ask the model the same thing and read the same rows back.
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/layer_masks.h"
#include "core/model/engine/model_bundle.h"
#include "core/model/engine/model_scheme.h"

#include <optional>
#include <string>
#include <vector>

namespace ropescope::model {

struct AttentionQuery {
    std::vector<QImage> images; // the prompt's images in order (at least one; one map per image)
    QString question;
    PreprocessOptions preprocess;
    ModelScheme scheme;          // the scheme to run; AGE as a strategy name or pattern, checked against the model
    std::vector<int> layers;     // captured decoder layers (empty: all), ascending
    std::optional<int> generate; // answer tokens (default: 32 with a chat template, else 1)
    bool answerMaps = false;     // also keep the attention of the step that produced each answer token
    bool compareOwn = false;     // also run the prompt under the model's own scheme (prefill only)
    bool meanQueryKey = false;   // also keep each captured layer's mean q and k (the model's own positional prior)
};

// One token of the prompt or of the answer that has its own map.
struct MapToken {
    QString text;
    int64_t id = 0;
    int64_t index = 0; // position in the sequence (answer tokens continue after the prompt)
    bool answer = false;
};

struct AttentionRun {
    AttentionRequest prompt;
    ModelScheme scheme, own;
    std::string untrained;                  // what differs from the model's own scheme; empty when nothing
    std::vector<int> layers;                // the captured layers, ascending
    ForwardResult result;                   // prefill.attentions: per captured layer [heads, question tokens, image tokens]
    std::optional<ForwardResult> ownResult; // with compareOwn
    std::vector<int64_t> generated;
    QString answer;
    // With answerMaps, per captured layer [heads, answer tokens, image tokens]: row k is the query that
    // produced answer token k (the prompt's last token for k = 0, then answer token k - 1).
    std::vector<at::Tensor> answerAttention;
    std::vector<MapToken> questionTokens, answerTokens; // answer tokens up to the end-of-answer token
    // Per captured layer: its mask (sliding with its window, or full), and the codes of the captured cells (what the
    // layer's mask hid: Gemma's sliding windows), which every view marks (layer_masks.h).
    std::vector<MaskKind> layerKinds;
    RunMasks masks;

    const std::vector<at::Tensor>& attention() const { return result.prefill.attentions; }
    // The tokens with a map of their own, in the order every view lists them: the question's, then the
    // answer's when their rows were kept (answerMaps).
    std::vector<MapToken> mapTokens() const;
    // Index of a captured layer in attention(); throws std::invalid_argument naming it when not captured.
    size_t captured(int layer) const;
    // One token's rows at a captured layer: [heads, 1, image tokens].
    at::Tensor tokenAttention(size_t capturedIndex, const MapToken& token) const;
    // The same token's row of mask codes at a captured layer: [image tokens] uint8 (layer_masks.h's KeyMask).
    at::Tensor tokenMask(size_t capturedIndex, const MapToken& token) const;
};

// The scheme side of a run, resolved once against a model: the scheme asked for and the one the model
// recorded, both AGE schedules parsed against the model's layer count, and what differs. Many questions
// under one scheme (eval's samples) share it. No scheme: the model's own. Throws ModelError for an AGE
// schedule that does not fit.
struct ResolvedScheme {
    ModelScheme scheme, own;
    std::optional<geometry::AgeSchedule> age, ownAge;
    std::string untrained; // what differs from the model's own scheme; empty when nothing
};
ResolvedScheme resolveScheme(const ModelBundle& model, const std::optional<ModelScheme>& scheme);

// Throws ModelError for an empty question, an AGE schedule that does not fit the model, a layer out of range.
AttentionRun runAttention(const ModelBundle& model, const AttentionQuery& query);
// The same under an already resolved scheme (query.scheme is not read).
AttentionRun runAttention(Vlm& vlm, const Tokenizer& tokenizer, const AttentionQuery& query, const ResolvedScheme& scheme);

} // namespace ropescope::model

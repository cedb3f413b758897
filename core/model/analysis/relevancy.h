#pragma once
// Gradient-weighted attention relevancy (Chefer, Gur and Wolf 2021, "Generic Attention-model
// Explainability for Interpreting Bi-Modal and Encoder-Decoder Transformers", rule for self-attention):
// R = I; for every decoder layer, R += mean_h[(dy/dA_h * A_h)^+] R, where y is the logit of the answer's
// first token at the prompt's last position. The last row of R over the image tokens says which patches
// the answer depends on, through attention and gradients rather than attention alone.
#include "core/model/analysis/attention_run.h"

#include <vector>

namespace ropescope::model {

struct Relevancy {
    std::vector<float> map; // R[last prompt token, image tokens], row-major on the image grid
    double textShare = 0;   // share of the last row's relevance (self excluded) on text tokens
    int64_t target = 0;     // the token id whose logit was explained
    // Pearson r between the map and the heads' mean attention of the row that predicts the answer (the
    // prompt's last token) at the last captured layer: how much of the relevancy attention alone shows.
    double attentionCorrelation = 0;
};

// Re-runs the run's prompt (its embeddings and position tables, every layer) with autograd on and
// differentiates the answer's first token logit. Throws std::invalid_argument when the run has no answer.
Relevancy gradientRelevancy(Vlm& vlm, const AttentionRun& run);

} // namespace ropescope::model

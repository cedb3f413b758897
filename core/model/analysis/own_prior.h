#pragma once
// The model's own positional prior (issue 13, item 6): how much of one head's text -> image map position
// alone explains. With every query and key replaced by their means over the prompt (mean_q, mean_k: the
// content averaged away), the head's score between the query at p_t and image token i is
//   s_i = (R(p_t) mean_q) . (R(p_i) mean_k) / sqrt(d) = mean_q^T R(p_i - p_t) mean_k / sqrt(d),
// rotated exactly as the decoder rotates (the layer's position table, allocation and head). Its softmax
// over the image tokens is the prior map; its Pearson correlation with the head's actual map says how much
// of that map is position rather than content.
#include "core/model/analysis/attention_run.h"

#include <vector>

namespace ropescope::model {

struct OwnPrior {
    std::vector<float> prior;  // softmax of s over the image tokens, row-major on the grid
    std::vector<float> actual; // the head's attention of the same token over the grid (headMap)
    double correlation = 0;    // Pearson r of prior and actual (0 when either is flat)
};

// The sequence index whose query row made `token`'s map: a question token's own; answer token k's
// predecessor (the prompt's last token for k = 0).
int64_t queryIndex(const AttentionRun& run, const MapToken& token);

// Every head of a layer at once (one rotary table for the layer), in head order.
std::vector<OwnPrior> ownPositionalPriors(const Vlm& vlm, const AttentionRun& run, int layer, const MapToken& token);
// Needs a run with AttentionQuery::meanQueryKey and the layer captured; throws std::invalid_argument
// naming what is missing (layer not captured, head out of range, no means kept).
OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, int head, const MapToken& token);
// The same for a heatmap's head choice: the heads' priors averaged (mean) or their per-cell maximum (max),
// against the map headMap draws for that choice.
OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, const HeadChoice& head, const MapToken& token);

// Pearson correlation of two equally long maps; 0 when either has no spread.
double pearson(const std::vector<float>& a, const std::vector<float>& b);

} // namespace ropescope::model

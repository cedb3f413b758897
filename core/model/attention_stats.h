#pragma once
#include <torch/torch.h>

namespace ropescope::model {

// Where one layer's text->image attention goes, from captured probabilities [heads, queries, image
// tokens] of one image whose merged grid is rows x cols (row-major).
struct AttentionStats {
    double imageMass = 0;         // mean over heads and queries of the probability on image tokens
    double entropy = 0;           // mean entropy (nats) of the attention renormalised over the image
    double normalizedEntropy = 0; // entropy / log(image tokens): 1 = uniform
    double centreRow = 0, centreCol = 0; // centre of mass of the mean map, in grid cells
};
AttentionStats attentionStats(const torch::Tensor& probs, int rows, int cols);

// The mean map over heads (head < 0) or one head, averaged over queries: [rows * cols].
torch::Tensor attentionMap(const torch::Tensor& probs, int head);

} // namespace ropescope::model

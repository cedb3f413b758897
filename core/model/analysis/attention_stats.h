#pragma once
#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <vector>

namespace ropescope::model {

// The merged grid of one image of a prompt. A prompt with several images captures their tokens one image
// after another (row-major each), so a capture's image columns are these grids in order.
struct GridShape {
    int rows = 0, cols = 0;
    int cells() const { return rows * cols; }
};
using GridShapes = std::vector<GridShape>;
int cellCount(const GridShapes& grids); // over every image

// Where one layer's text->image attention goes, from captured probabilities [heads, queries, image
// tokens] of one image whose merged grid is rows x cols (row-major).
struct AttentionStats {
    double imageMass = 0;                // mean over heads and queries of the probability on image tokens
    double entropy = 0;                  // mean entropy (nats) of the attention renormalised over the image
    double normalizedEntropy = 0;        // entropy / log(image tokens): 1 = uniform
    double centreRow = 0, centreCol = 0; // centre of mass of the mean map, in grid cells of centreImage
    int centreImage = 0;                 // with several images: the one holding most of the mean map's mass
};
AttentionStats attentionStats(const at::Tensor& probs, const GridShapes& grids);
inline AttentionStats attentionStats(const at::Tensor& probs, int rows, int cols)
{
    return attentionStats(probs, GridShapes{{rows, cols}});
}

// Per image of the prompt, the mean over heads and queries of the probability on its tokens: how the
// layer's attention splits between the images. imageShares divides by their sum.
std::vector<double> imageMasses(const at::Tensor& probs, const GridShapes& grids);
std::vector<double> imageShares(const at::Tensor& probs, const GridShapes& grids);
std::vector<double> sharesOf(std::vector<double> masses); // each divided by their sum (0 when it is 0)

// One head's text->image attention at one layer: how much goes to the image, how spread it is, and how
// much of it piles onto "sink" patches. Shares are of the head's attention over the image (each query
// renormalised over the image, then averaged over queries).
struct HeadStats {
    double imageMass = 0;         // mean over queries of the probability on image tokens
    double normalizedEntropy = 0; // of the mean map over the image: 1 = uniform
    double topShare = 0;          // on the top 1% of patches (at least one)
    double borderShare = 0;       // on the first and last rows and columns of the grid (of every image)
    double firstShare = 0;        // on the first image token (of every image)
};
std::vector<HeadStats> headStats(const at::Tensor& probs, const GridShapes& grids); // one per head
inline std::vector<HeadStats> headStats(const at::Tensor& probs, int rows, int cols)
{
    return headStats(probs, GridShapes{{rows, cols}});
}
HeadStats meanOverHeads(const std::vector<HeadStats>& heads);

// Every head of every captured layer, layer-major: its map (mean over queries, over every image's cells) and stats.
// What the layers x heads views draw and tabulate.
struct LayerHeadMaps {
    int heads = 0;
    std::vector<std::vector<float>> maps;
    std::vector<HeadStats> stats;
    std::vector<double> imageMass() const;
};
LayerHeadMaps layerHeadMaps(const std::vector<at::Tensor>& layers, const GridShapes& grids);

// The mean map over heads (head < 0) or one head, averaged over queries: [image tokens].
at::Tensor attentionMap(const at::Tensor& probs, int head);

// How far the attention over the image moved between two runs of one prompt (one layer's captured
// probabilities each, same shape, e.g. two schemes): the total-variation distance between their mean
// maps, each renormalised over the image. 0: the same places; 1: disjoint places.
double attentionShift(const at::Tensor& from, const at::Tensor& to);

} // namespace ropescope::model

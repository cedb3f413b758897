#pragma once
// Image region -> text (the patch selector): which text tokens attend a chosen set of image cells.
#include "core/model/analysis/attention_run.h"

#include <vector>

namespace ropescope::model {

// A rectangle of merged-grid cells of one of the prompt's images, corners inclusive and in any order.
struct CellRegion {
    int row0 = 0, col0 = 0, row1 = 0, col1 = 0;
    int image = 0;                                    // which image of the prompt (0: the first)
    std::vector<int> cells(int rows, int cols) const; // row-major indices, ascending, clamped to the grid
    // Its cells as indices into the prompt's image tokens; throws std::invalid_argument naming an image or
    // corner outside the prompt.
    std::vector<int> tokensIn(const AttentionRequest& prompt) const;
    QString toString() const; // "r0,c0,r1,c1", "IMAGE:r0,c0,r1,c1" past the first image
    // "[IMAGE:]r0,c0,r1,c1" or "[IMAGE:]r,c" (one cell), IMAGE counted from 1; throws std::invalid_argument
    // saying what is wrong.
    static CellRegion parse(const QString& text);

private:
    static CellRegion parseCorners(const QString& text);
};

struct RegionAttention {
    std::vector<int> cells;       // the region, as indices into the prompt's image tokens
    double area = 0;              // its share of the image tokens: what a token that ignores position gives it
    std::vector<MapToken> tokens; // question tokens, then answer tokens when the run kept their rows
    std::vector<int> layers;      // the captured layers
    // [captured layer][token]: attention probability on the region (summed over its cells), and that as a
    // share of the token's attention on the whole image; for the head choice (mean over heads, the head
    // with the largest mass on the region, or one head; the share of the same head or the heads' means).
    std::vector<std::vector<double>> mass, share;
    // The tokens of a captured layer by share, largest first (at most `count`).
    std::vector<int> strongest(size_t capturedIndex, int count) const;
};

// `cells` index the prompt's image tokens (CellRegion::tokensIn). Throws std::invalid_argument for an empty
// region or a cell outside them.
RegionAttention regionAttention(const AttentionRun& run, const std::vector<int>& cells, const HeadChoice& head);

} // namespace ropescope::model

#pragma once
// A batch as a pipeline holds it (input_ids, attention_mask, mm_token_type_ids, the grids, second_per_grid_ts),
// viewed in place: the arrays stay the caller's (a dump read from a file, numpy arrays from Python), and every
// shape, id and grid is checked here, once, before a sample is placed.
#include "core/geometry/position_table.h"
#include "core/positions/family_rule.h"
#include "core/positions/token_layout.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ropescope::positions {

// A batch that cannot be placed: one line naming the batch (when it has a name) and the tensor.
class BadBatch : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

inline int64_t elementCount(const std::vector<int64_t>& shape)
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

// A row-major view of reals; `given` false: the tensor is absent.
struct RealView {
    bool given = false;
    std::vector<int64_t> shape;
    const double* data = nullptr;

    int64_t numel() const { return elementCount(shape); }
    double operator[](int64_t i) const { return data[i]; }
};

// A row-major view of whole numbers in their own width, so a dump's int32 ids are read where they lie, never
// widened into a copy: int64, int32, int16, int8, or uint8 (uint8 and bool).
struct IntView {
    enum class Element : std::uint8_t { I64, I32, I16, I8, U8 };
    bool given = false;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    Element element = Element::I64;

    int64_t numel() const { return elementCount(shape); }
    int64_t operator[](int64_t i) const
    {
        switch (element) {
        case Element::I64: return static_cast<const int64_t*>(data)[i];
        case Element::I32: return static_cast<const int32_t*>(data)[i];
        case Element::I16: return static_cast<const int16_t*>(data)[i];
        case Element::I8: return static_cast<const int8_t*>(data)[i];
        case Element::U8: return static_cast<const uint8_t*>(data)[i];
        }
        return 0;
    }
};

struct Batch {
    std::string name;                  // the file (and prefix) in messages; empty: none
    IntView inputIds;                  // [B, L]
    IntView attentionMask, tokenTypes; // [B, L] each, optional (mm_token_type_ids: 0 text, 1 image, 2 video)
    IntView imageGrids, videoGrids;    // [N, 3], optional; flattened over the batch, in order
    RealView secondPerGrid;            // one per video_grid_thw row, optional

    [[noreturn]] void bad(const std::string& what) const;
};

// A rule's position as a whole number (M-RoPE's positions are whole; floor(v + 0.5) rounds without a libm call,
// which the per-token loops would otherwise spend most of their time in).
inline int64_t wholePosition(double v)
{
    return static_cast<int64_t>(std::floor(v + 0.5));
}

// One sample as the family's rule places it.
struct SamplePositions {
    int64_t row = 0;
    std::vector<int64_t> where;    // the attended tokens' indices in the row (attention_mask 1)
    std::vector<int64_t> ids;      // and their ids as the rule reads them (typed families: stand-ins for vision tokens)
    std::vector<Grid> videos;      // this sample's video grids
    std::vector<size_t> videoRows; // and their rows in video_grid_thw
    geometry::PositionTable table; // the attended tokens' layout and their positions under the rule
};

// Checks the batch (throws BadBatch naming the tensor: wrong shapes, ids out of the vocabulary, masks that are
// not 0/1, grids that do not fit the ids, more or fewer grids than token runs) and hands each sample, placed
// by the rule, to `visit` in row order.
void forEachSample(const Batch& batch, const FamilyRule& rule, const std::function<void(const SamplePositions&)>& visit);

// transformers' get_rope_index: position_ids [3, B, L] (XD-RoPE: [4, B, L]; the sequential families: [1, B, L], the
// cumsum rule of generate; rule.components() rows; padding 1, as transformers fills it) and rope_deltas [B] (max
// position + 1 - L), written to the caller's arrays.
void ropeIndex(const Batch& batch, const FamilyRule& rule, int64_t* positionIds, int64_t* ropeDeltas);

} // namespace ropescope::positions

#pragma once
// A pipeline's position ids against its family's rule, sample by sample: where the first difference is, on which
// axis, in which segment, and what kind of mistake its shape shows (1-D positions, temporal ids, a padding
// offset, rope_deltas). What `ropescope check-positions`, the window's dialog and ropescope.check_positions in
// Python all run.
#include "core/geometry/position_table.h"
#include "core/positions/batch.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ropescope::positions {

enum class FaultKind { None, OneD, Temporal, Offset, RopeDeltas, Other };
const char* faultKindName(FaultKind kind);  // "none", "1-d", "temporal", "offset", "rope-deltas", "other"
const char* faultKindWords(FaultKind kind); // one sentence for people

struct SampleCheck {
    int row = 0;        // in the batch
    int64_t tokens = 0; // attended tokens
    FaultKind kind = FaultKind::None;
    std::string detail;      // the shape of the difference, in words
    int64_t firstToken = -1; // index in the row (padding included) of the first differing position
    int axis = -1;           // 0 t, 1 h, 2 w (3: the text row of a [4,B,L] table); XD-RoPE: 0 p, 1 w, 2 h, 3 t; sequential: 0
    int64_t got = 0, expected = 0;
    std::string segment;   // "text", "image 0", "video 1 frame 3"
    int64_t differing = 0; // attended tokens with any axis different
    // Sequential families: the packed sequences the row holds (a position of 0 after its first attended token starts
    // the next one, as transformers reads packed position ids); 1 for the others.
    int64_t sequences = 1;
    // The sample's attended positions (rule.components() x tokens, row-major), kept for the report's figures.
    std::vector<int64_t> gotPositions, expectedPositions;
    std::vector<std::string> segments; // per attended token ("boi of image 0" and "eoi of ..." for Gemma's markers)
    std::string layout;                // the rule's layout of the attended tokens ("text:4,image:2x3,text:6")
};

// Checks every row of `batch` against `rule`: `positionIds` is [3, B, L] or [4, B, L] (transformers 5's
// generate: row 0 the text position; XD-RoPE's own four rows p, w, h, t; the sequential families' [B, L] or
// [1, B, L], whose rows may hold packed sequences: positions that restart at 0), `ropeDeltas` (optional) one
// number per sample. Throws BadBatch naming the tensor for a batch that cannot be checked.
std::vector<SampleCheck> checkBatch(const Batch& batch, const IntView& positionIds, const IntView& ropeDeltas, const FamilyRule& rule,
                                    bool keepPositions);
// The same, each sample handed to `each` as it is checked and kept nowhere: check-positions streams a dump of
// millions of samples through this, counting them and keeping only the first few.
void checkBatchEach(const Batch& batch, const IntView& positionIds, const IntView& ropeDeltas, const FamilyRule& rule, bool keepPositions,
                    const std::function<void(SampleCheck&&)>& each);

} // namespace ropescope::positions

#pragma once
#include "core/geometry/layout.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ropescope::positions {

using Grid = std::array<int64_t, 3>; // (t, h, w) in patches

// What reading a token sequence needs of a family: its image and video pad ids, the merge size, and whether a
// video's temporal patches are runs of their own.
struct TokenRule {
    int64_t imageToken = 151655;
    int64_t videoToken = 151656;
    int64_t mergeSize = 2;
    bool splitVideoFrames = false;
    int64_t temporalMerge = 1; // ERNIE-4.5-VL: video_grid_thw's t is frames, this many to a temporal patch
    // XD-RoPE: a run is one span, h rows of w + 1 tokens (each row's newline) plus one token before and after,
    // placed as an image:HxW (video:1xHxW) segment whose table adds those tokens (geometry::xdRopeTable).
    bool xdSpans = false;
};

// The geometry layout a token sequence describes: each run of image (video) tokens becomes an
// image:HxW (video:TxHxW) segment of the merged grid taken from image_grid_thw (video_grid_thw) in order;
// everything else, <|vision_start|> and <|vision_end|> included, is text. Qwen3-VL's videos are one
// video:1xHxW run per temporal patch (the frames are separated by timestamp text), as its get_rope_index
// splits video_grid_thw. ERNIE's videos have t / temporalMerge frames; XD-RoPE's runs hold h (w + 1) + 2 tokens.
// Throws geometry::InvalidInput when the token counts and the grids disagree.
geometry::Layout layoutFromTokens(const std::vector<int64_t>& ids, const std::vector<Grid>& imageGrids, const std::vector<Grid>& videoGrids,
                                  const TokenRule& rule);

// A sequential family's layout (Gemma 3 and 4, no grids): each run of image tokens an image:1xN segment, each run of
// video tokens a video:1x1xN (Gemma 4 wraps every frame in its own boi ... eoi), everything else text. The positions
// are the tokens' order whatever the layout; it names the tokens in a report. A negative id matches no token.
geometry::Layout sequentialLayout(const std::vector<int64_t>& ids, int64_t imageToken, int64_t videoToken);

} // namespace ropescope::positions

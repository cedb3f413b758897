#pragma once
#include "core/geometry/layout.h"
#include "core/model/engine/model_config.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ropescope::model {

using Grid = std::array<int64_t, 3>; // (t, h, w) in patches

// The geometry layout a token sequence describes: each run of image (video) tokens becomes an
// image:HxW (video:TxHxW) segment of the merged grid taken from image_grid_thw (video_grid_thw) in order;
// everything else, <|vision_start|> and <|vision_end|> included, is text. Qwen3-VL's videos are one
// video:1xHxW run per temporal patch (the frames are separated by timestamp text), as its get_rope_index
// splits video_grid_thw. Throws ModelError when the token counts and the grids disagree.
geometry::Layout layoutFromTokens(const std::vector<int64_t>& ids, const std::vector<Grid>& imageGrids, const std::vector<Grid>& videoGrids,
                                  const ModelConfig& config);

} // namespace ropescope::model

#pragma once
#include "core/geometry/layout.h"
#include "core/model/engine/model_config.h"
#include "core/positions/token_layout.h"

#include <cstdint>
#include <vector>

namespace ropescope::model {

using Grid = positions::Grid; // (t, h, w) in patches

// The token rule of a model: its own image and video ids and merge size, and whether its processor writes a
// video's temporal patches as runs of their own (separatesVideoFrames).
positions::TokenRule tokenRule(const ModelConfig& config);

// positions::layoutFromTokens with the model's token rule (the rule itself lives below Qt and LibTorch, so the
// Python package runs the same code); throws ModelError when the token counts and the grids disagree.
geometry::Layout layoutFromTokens(const std::vector<int64_t>& ids, const std::vector<Grid>& imageGrids, const std::vector<Grid>& videoGrids,
                                  const ModelConfig& config);

} // namespace ropescope::model

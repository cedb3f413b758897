#pragma once
// The vision encoder's own positions of Gemma 4's patches: what its image processor writes as image_position_ids
// (and, frame by frame, video_position_ids), for a pipeline's to be checked against. No Qt, no LibTorch.
#include <cstdint>
#include <vector>

namespace ropescope::positions {

// Most patches one image may be padded to (Gemma 4's largest budget is 1120 soft tokens x 3 x 3 = 10080).
constexpr int64_t kMaxPatches = int64_t(1) << 20;

// One image of heightPatches x widthPatches patches padded to maxPatches, as transformers' Gemma4ImageProcessor
// (and its PIL twin) at c1ff11866b writes it: maxPatches rows of (x, y), row-major, the patches in row-major order
// (x = column fastest, then y = row: np.meshgrid(arange(w), arange(h), indexing="xy")), then (-1, -1) for every
// padding patch. Throws geometry::InvalidInput naming the parameter for sizes that are not positive or do not fit.
std::vector<int64_t> gemma4PatchPositions(int64_t heightPatches, int64_t widthPatches, int64_t maxPatches);

} // namespace ropescope::positions

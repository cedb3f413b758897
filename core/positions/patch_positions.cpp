#include "core/positions/patch_positions.h"

#include "core/geometry/errors.h"

#include <string>

namespace ropescope::positions {

std::vector<int64_t> gemma4PatchPositions(int64_t heightPatches, int64_t widthPatches, int64_t maxPatches)
{
    using geometry::InvalidInput;
    if (maxPatches < 1 || maxPatches > kMaxPatches)
        throw InvalidInput("max_patches", "must be from 1 to " + std::to_string(kMaxPatches) + ", got " + std::to_string(maxPatches));
    if (heightPatches < 1)
        throw InvalidInput("height_patches", "must be at least 1, got " + std::to_string(heightPatches));
    if (widthPatches < 1)
        throw InvalidInput("width_patches", "must be at least 1, got " + std::to_string(widthPatches));
    // Each side is bounded by the budget before they are multiplied, so the product cannot overflow.
    if (heightPatches > maxPatches || widthPatches > maxPatches || heightPatches * widthPatches > maxPatches)
        throw InvalidInput("max_patches",
                           std::to_string(heightPatches) + " x " + std::to_string(widthPatches) + " patches do not fit in " +
                               std::to_string(maxPatches));
    std::vector<int64_t> out(static_cast<size_t>(2 * maxPatches), -1);
    size_t at = 0;
    for (int64_t y = 0; y < heightPatches; ++y)
        for (int64_t x = 0; x < widthPatches; ++x) {
            out[at++] = x;
            out[at++] = y;
        }
    return out;
}

} // namespace ropescope::positions

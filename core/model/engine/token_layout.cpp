#include "core/model/engine/token_layout.h"

#include "core/geometry/errors.h"

namespace ropescope::model {

positions::TokenRule tokenRule(const ModelConfig& config)
{
    positions::TokenRule r;
    r.imageToken = config.imageToken;
    r.videoToken = config.videoToken;
    r.mergeSize = config.vision.mergeSize;
    r.splitVideoFrames = separatesVideoFrames(config.architecture);
    return r;
}

geometry::Layout layoutFromTokens(const std::vector<int64_t>& ids, const std::vector<Grid>& imageGrids, const std::vector<Grid>& videoGrids,
                                  const ModelConfig& config)
{
    try {
        return positions::layoutFromTokens(ids, imageGrids, videoGrids, tokenRule(config));
    } catch (const geometry::InvalidInput& e) {
        throw ModelError(e.what());
    }
}

} // namespace ropescope::model

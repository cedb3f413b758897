#pragma once
// The bridge from a prompt's images (core/model) to the pictures its maps are drawn on (views), shared by
// the CLI, batch and the GUI.
#include "charts/attention_heatmap.h"
#include "model/attend_request.h"

namespace ropescope {

inline views::MapPictures mapPictures(const std::vector<model::PromptImage>& images)
{
    views::MapPictures pictures;
    for (const model::PromptImage& image : images)
        pictures.push_back({image.resized, image.rows, image.cols});
    return pictures;
}

} // namespace ropescope

#pragma once
// The bridge from a run (core/model) to what its figures draw (views), shared by the CLI, batch and the
// GUI: the prompt's images as the pictures its maps are drawn on, and the layers x heads small multiples.
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"
#include "views/charts/attention_figures.h"
#include "views/charts/attention_heatmap.h"

#include <algorithm>

namespace ropescope::reports {

inline views::MapPictures mapPictures(const std::vector<model::PromptImage>& images)
{
    views::MapPictures pictures;
    for (const model::PromptImage& image : images)
        pictures.push_back({image.resized, image.rows, image.cols});
    return pictures;
}

// Every captured layer x head of a run, as the CLI's layers_heads figure and the GUI's tab draw it.
inline views::LayerHeadGrid layerHeadGrid(const model::AttentionRun& run)
{
    views::LayerHeadGrid grid;
    grid.layers = run.layers;
    grid.heads = static_cast<int>(run.attention().front().size(0));
    for (const model::PromptImage& image : run.prompt.images)
        grid.grids.push_back(QSize(image.cols, image.rows));
    model::LayerHeadMaps maps = model::layerHeadMaps(run.attention(), run.prompt.grids());
    grid.imageMass = maps.imageMass();
    grid.maps = std::move(maps.maps);
    // Gemma: each row says its layer's mask, and the cells it hid from the question are grey.
    const bool kinds = std::any_of(run.layerKinds.begin(), run.layerKinds.end(), [](const model::MaskKind& k) { return k.sliding; });
    for (size_t k = 0; k < run.layers.size(); ++k) {
        if (kinds && k < run.layerKinds.size())
            grid.layerKinds.push_back(QString::fromStdString(run.layerKinds[k].words()));
        if (k < run.masks.question.size())
            grid.hidden.push_back(model::hiddenKeys(run.masks.question[k]));
    }
    return grid;
}

} // namespace ropescope::reports

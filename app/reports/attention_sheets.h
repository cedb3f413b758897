#pragma once
// The per-token sheet of a run (every question and answer token's map at one layer), built once for the
// CLI's `attend --per-token`, batch and the GUI's export, so all of them draw the same figure.
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/attention_run.h"
#include "views/charts/attention_figures.h"
#include "views/charts/attention_heatmap.h"

#include <QString>

#include <vector>

namespace ropescope::reports {

constexpr size_t kMaxSheetMaps = 256; // a long chat prompt's sheet stays a figure, not a poster

// Token text as a caption: whitespace made visible, so "\n" and " " tokens are not blank.
QString visibleToken(const QString& text);
// The question's tokens, then the answer's, at most kMaxSheetMaps.
std::vector<model::MapToken> sheetTokens(const model::AttentionRun& run);
// A sheet cell holds the prompt's images side by side: wide enough for each to stay legible.
int sheetCellWidth(const model::AttentionRequest& prompt);
// Every sheet token's map at captured layer `heatIndex` under `head`, captioned with its image mass; titled
// with the layer, the head and `schemeTitle`.
views::MapSheet tokenSheet(const model::AttentionRun& run, size_t heatIndex, const model::HeadChoice& head,
                           const views::HeatmapOptions& heat, const QString& schemeTitle);

} // namespace ropescope::reports

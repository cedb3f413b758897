#pragma once
// The tables beside the attention figures, as `attend` writes them and the Attention tab exports them next to
// its figure (app/cli/attend_output_table.cpp, app/gui/attention_panel_settings.cpp): one builder each, so the
// CLI and the window write the same columns. LibTorch inside (through the model's run): include only from
// the .cpp files of the commands and views that hold a run.
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/own_prior.h"
#include "core/model/analysis/region_attention.h"
#include "core/model/analysis/scheme_comparison.h"

#include <QByteArray>

#include <vector>

namespace ropescope::reports {

// layers_heads.csv: per captured layer and head, the image mass, entropy and sink shares.
QByteArray layersHeadsCsv(const model::AttentionRun& run);
// region.csv: per layer and token (question and answer), the mass on the region and its share.
QByteArray regionCsv(const model::RegionAttention& r);
// own_prior.csv: per layer and head, the correlation of the own prior with attention for `token`; `priors` is
// layer-major, every head of each of `layers`.
QByteArray ownPriorCsv(const std::vector<int>& layers, const model::MapToken& token, const std::vector<model::OwnPrior>& priors);
// schemes.csv: per scheme compared, its answer, PTD, prior spread, shift and attention statistics.
QByteArray schemesCsv(const model::SchemeComparison& comparison);

} // namespace ropescope::reports

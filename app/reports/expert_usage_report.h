#pragma once
// The expert-usage view's files, as `attend --expert-usage` writes them and the Attention tab's Experts view
// exports them: one builder each, so the CLI and the window write the same columns and figure.
#include "core/model/analysis/expert_usage.h"
#include "views/charts/expert_usage_chart.h"

#include <QByteArray>
#include <QJsonObject>

namespace ropescope::reports {

// expert_usage.csv: per sparse layer and expert, the image and text tokens' shares and mean router weights.
QByteArray expertUsageCsv(const model::ExpertUsage& usage);
// expert_usage.json: the same per layer, with the token counts and each layer's overlap (the share of routing the
// two kinds have in common: sum over experts of min(image, text) / top-k; 1 when they use the experts alike).
QJsonObject expertUsageJson(const model::ExpertUsage& usage);
double imageTextOverlap(const model::ExpertUsage& usage, size_t layerIndex);
views::ExpertUsageGrid expertUsageGrid(const model::ExpertUsage& usage, const QString& title);

} // namespace ropescope::reports

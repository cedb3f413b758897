#pragma once
// `attend --schemes`: one prompt under several position schemes side by side, as files.
#include "app/cli/attend_run.h"
#include "core/model/analysis/scheme_comparison.h"

#include <QJsonArray>

namespace ropescope::cli {

// --schemes: the same prompt under each entry ("circle:alpha=0.3:age=strategy_4"; vectors with '/':
// "mm-rope:position-scale=4/8/8"), at the heatmap layer.
struct SchemesOutcome {
    model::SchemeComparison comparison;
    QJsonArray rows; // for summary.json
    QByteArray figure(views::FigureFormat format, const views::HeatmapOptions& heat) const;
    QByteArray csv() const;
};
std::vector<model::SchemeEntry> parseSchemeEntries(const QStringList& entries, int layers); // throws UsageError
// `first`: the run of schemes[0] (runAttentionOnce's), reused as the comparison's first row.
SchemesOutcome runAttentionSchemes(ModelOnDevice& model, const AttentionOptions& options, const std::vector<model::SchemeEntry>& schemes,
                                   const model::AttentionRun& first);

// One attention run as `attend` and batch items make it: under --schemes' first entry, compared with the rest
// (the summary gains the comparison's rows), else under the scheme flags (the model's own scheme by default).
struct AttentionAsAsked {
    AttentionOutcome run;
    std::optional<SchemesOutcome> compared; // with --schemes
};
AttentionAsAsked runAttentionAsAsked(ModelOnDevice& model, const QCommandLineParser& parser, const AttentionOptions& options);

} // namespace ropescope::cli

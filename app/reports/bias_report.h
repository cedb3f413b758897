#pragma once
// The files of a bias measurement (`ropescope bias`, batch `bias` items): the figure, the table and the JSON,
// from an accumulation (one run, or merged shards). The GUI's Bias view draws the same figure.
#include "core/model/analysis/positional_bias.h"
#include "views/charts/bias_figure.h"
#include "views/charts/chart_export.h"

#include <QByteArray>
#include <QJsonObject>

namespace ropescope::reports {

struct BiasReport {
    views::BiasFigure figureData; // question maps, every scheme x measured layer
    QByteArray csv;               // one row per scheme x layer x map, with intervals
    QJsonObject json;             // sample count, parameters, every summary with its interval, the geometry
    QByteArray figure(views::FigureFormat format) const;
};
// `partial`: empty, or for a merge of an incomplete set allowed on purpose (bias --merge --allow-partial) what
// is missing ({"note": "shard 2 of 4 is missing (...)", ...}); the JSON then holds it as "partial_merge" and
// the figure's title says so.
BiasReport biasReport(const model::BiasAccumulation& accumulation, const QJsonObject& partial = {});
// With --keep-samples: one row per scheme x layer x map x sample, its map on the common grid (cell_r_c), then
// for videos its mass per temporal patch (frame_k).
QByteArray biasSamplesCsv(const model::BiasAccumulation& accumulation);
// Writes bias.png/.svg/.pdf, bias.csv, bias.json, bias_state.json (and bias_samples.csv when kept) into `folder` (created), all or none
// (io::StagedFiles); throws io::IoError naming the file.
void writeBiasFiles(const QString& folder, const model::BiasAccumulation& accumulation, const QJsonObject& partial = {});

} // namespace ropescope::reports

#pragma once
// The files of a bias measurement (`ropescope bias`, batch `bias` items): the figure, the table and the JSON,
// from an accumulation (one run, or merged shards). The GUI's Bias view draws the same figure.
#include "charts/bias_figure.h"
#include "charts/chart_export.h"
#include "model/positional_bias.h"

#include <QByteArray>
#include <QCommandLineParser>
#include <QImage>
#include <QJsonObject>

#include <functional>
#include <utility>
#include <vector>

namespace ropescope::cli {

struct BiasReport {
    views::BiasFigure figureData; // question maps, every scheme x measured layer
    QByteArray csv;               // one row per scheme x layer x map, with intervals
    QJsonObject json;             // sample count, parameters, every summary with its interval, the geometry
    QByteArray figure(views::FigureFormat format) const;
};
BiasReport biasReport(const model::BiasAccumulation& accumulation);

struct AttendModel;

// Where the samples come from: the synthetic stream, a question set, or a folder of images with one question.
struct SampleSource {
    QString description; // recorded, and compared when shards merge
    int64_t total = 0;
    std::function<std::pair<QImage, QString>(int64_t)> sampleAt;
    std::vector<QString> files; // images of a question set or folder, for the grid rule
};
struct BiasSetup {
    SampleSource source;
    std::vector<int64_t> indices; // this run's (or shard's) samples
};
// The flags of `bias` and of batch `bias` items (all but --output and --merge).
void addBiasOptions(QCommandLineParser& parser);
// Checks the flags that need no model; throws UsageError naming the bad one.
BiasSetup parseBiasOptions(const QCommandLineParser& parser);
// Measures with a loaded model: its own scheme, then --schemes entries that differ from it.
model::BiasAccumulation measureBiasFromFlags(const QCommandLineParser& parser, const BiasSetup& setup, AttendModel& model,
                                             const std::function<void(int64_t, int64_t)>& progress = {},
                                             const std::function<bool()>& cancelled = {});

} // namespace ropescope::cli

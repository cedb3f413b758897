#include "app/reports/bias_report.h"

#include "core/io/csv.h"
#include "core/io/atomic_file.h"

#include <QDir>
#include <QJsonDocument>

#include <QJsonArray>

namespace ropescope::reports {
namespace {

QJsonObject estimateJson(const model::Estimate& e)
{
    return QJsonObject{{"value", e.value}, {"ci95", QJsonArray{e.low, e.high}}};
}

QJsonArray numbers(const std::vector<double>& v)
{
    QJsonArray out;
    for (double x : v)
        out.append(x);
    return out;
}

QByteArray csvEstimate(const model::Estimate& e)
{
    return QByteArray::number(e.value, 'g', 10) + "," + QByteArray::number(e.low, 'g', 10) + "," + QByteArray::number(e.high, 'g', 10);
}

} // namespace

QByteArray biasSamplesCsv(const model::BiasAccumulation& a)
{
    QByteArray csv = "scheme,layer,map,sample";
    for (int r = 0; r < a.rows; ++r)
        for (int c = 0; c < a.cols; ++c)
            csv += ",cell_" + QByteArray::number(r) + "_" + QByteArray::number(c);
    for (int f = 0; f < a.frames; ++f)
        csv += ",frame_" + QByteArray::number(f);
    csv += "\n";
    for (qsizetype s = 0; s < a.schemes.size(); ++s)
        for (size_t l = 0; l < a.layers.size(); ++l)
            for (int m = 0; m < model::kBiasMaps; ++m) {
                const model::BiasCell& cell = a.cell(static_cast<size_t>(s), l, static_cast<model::BiasMap>(m));
                for (size_t k = 0; k < cell.samples.size() && k < cell.sampleMaps.size(); ++k) {
                    csv += io::csvField(a.schemes[s]).toUtf8() + "," + QByteArray::number(a.layers[l]) + "," +
                        model::biasMapName(static_cast<model::BiasMap>(m)) + "," +
                        QByteArray::number(static_cast<qlonglong>(cell.samples[k].sample));
                    for (double v : cell.sampleMaps[k])
                        csv += "," + QByteArray::number(v, 'g', 17);
                    csv += "\n";
                }
            }
    return csv;
}

QByteArray BiasReport::figure(views::FigureFormat format) const
{
    const views::BiasFigure f = figureData;
    return views::renderFigure([f](QPainter& p, const QRectF& area) { views::paintBiasFigure(p, area, f); }, views::biasFigureSize(f),
                               format, QJsonObject{{"figure", "positional bias"}, {"title", f.title}});
}

BiasReport biasReport(const model::BiasAccumulation& a, const QJsonObject& partial)
{
    BiasReport r;
    const int64_t measured = a.sampleCount();
    views::BiasFigure& f = r.figureData;
    // The model and what it was trained with, then the schemes the rows are: "mrope, trained with mrope" alone over three
    // schemes' rows read as if every row were mrope (issue 72 item 9).
    f.title = QString("Mean question -> %1 attention, %2 of %3 samples; model %4; rows: %5")
                  .arg(a.frames > 0 ? "video (within-frame)" : "image")
                  .arg(measured)
                  .arg(a.total)
                  .arg(a.model, a.schemes.join(", "));
    if (!partial.isEmpty())
        f.title += " - PARTIAL MERGE (--allow-partial): " + partial.value("note").toString();
    f.schemes = a.schemes;
    f.layers = a.layers;
    f.rows = a.rows;
    f.cols = a.cols;
    r.csv =
        "scheme,layer,map,samples,ptd,prior_spread,centre_row,centre_row_low,centre_row_high,centre_col,centre_col_low,centre_col_high,"
        "last_vs_first_row,last_vs_first_row_low,last_vs_first_row_high,last_vs_first_col,last_vs_first_col_low,last_vs_first_col_high,"
        "distance_correlation,distance_correlation_low,distance_correlation_high,to_last,to_last_low,to_last_high,to_first,to_first_low,"
        "to_first_high,to_text_before,to_text_before_low,to_text_before_high,last_vs_first_frame,last_vs_first_frame_low,"
        "last_vs_first_frame_high\n";
    QJsonArray schemes;
    for (qsizetype s = 0; s < a.schemes.size(); ++s) {
        const model::BiasGeometry& g = a.geometry[static_cast<size_t>(s)];
        QJsonArray layers;
        for (size_t l = 0; l < a.layers.size(); ++l) {
            const double ptd = l < g.ptd.size() ? g.ptd[l] : 0.0, spread = l < g.priorSpread.size() ? g.priorSpread[l] : 0.0;
            QJsonObject layer{{"layer", a.layers[l]}, {"ptd", ptd}, {"prior_spread", spread}};
            for (int m = 0; m < model::kBiasMaps; ++m) {
                const auto map = static_cast<model::BiasMap>(m);
                const model::BiasSummary sum = model::summarize(a.cell(static_cast<size_t>(s), l, map), a.rows, a.cols);
                layer[model::biasMapName(map)] = QJsonObject{
                    {"samples", sum.samples},
                    {"mean_map", numbers(sum.meanMap)},
                    {"row_profile", numbers(sum.rowProfile)},
                    {"col_profile", numbers(sum.colProfile)},
                    {"centre_of_mass", QJsonObject{{"row", estimateJson(sum.centreRow)}, {"col", estimateJson(sum.centreCol)}}},
                    {"offset_from_centre", QJsonObject{{"row", estimateJson(sum.rowOffset)}, {"col", estimateJson(sum.colOffset)}}},
                    {"last_vs_first_row", estimateJson(sum.lastVsFirstRow)},
                    {"last_vs_first_col", estimateJson(sum.lastVsFirstCol)},
                    {"distance_correlation", estimateJson(sum.distanceCorrelation)},
                    {"boundary",
                     QJsonObject{{"to_last_visual", estimateJson(sum.toLast)},
                                 {"to_first_visual", estimateJson(sum.toFirst)},
                                 {"to_text_before", estimateJson(sum.toTextBefore)}}},
                };
                if (a.frames > 0) {
                    QJsonObject withFrames = layer[model::biasMapName(map)].toObject();
                    withFrames["frame_profile"] = numbers(sum.frameProfile);
                    withFrames["last_vs_first_frame"] = estimateJson(sum.lastVsFirstFrame);
                    layer[model::biasMapName(map)] = withFrames;
                }
                r.csv += io::csvField(a.schemes[s]).toUtf8() + "," + QByteArray::number(a.layers[l]) + "," + model::biasMapName(map) + "," +
                    QByteArray::number(sum.samples) + "," + QByteArray::number(ptd, 'g', 10) + "," + QByteArray::number(spread, 'g', 10) +
                    "," + csvEstimate(sum.centreRow) + "," + csvEstimate(sum.centreCol) + "," + csvEstimate(sum.lastVsFirstRow) + "," +
                    csvEstimate(sum.lastVsFirstCol) + "," + csvEstimate(sum.distanceCorrelation) + "," + csvEstimate(sum.toLast) + "," +
                    csvEstimate(sum.toFirst) + "," + csvEstimate(sum.toTextBefore) + "," +
                    (a.frames > 0 ? csvEstimate(sum.lastVsFirstFrame) : QByteArray(",,")) + "\n";
                if (map != model::BiasMap::Question)
                    continue;
                f.maps.push_back(sum.meanMap);
                f.captions.push_back({QString("centre %1, %2").arg(sum.centreRow.value, 0, 'f', 2).arg(sum.centreCol.value, 0, 'f', 2),
                                      QString("r(dist) %1, PTD %2").arg(sum.distanceCorrelation.value, 0, 'f', 2).arg(ptd, 0, 'f', 2)});
                if (l + 1 == a.layers.size()) {
                    f.rowProfiles.push_back(sum.rowProfile);
                    f.colProfiles.push_back(sum.colProfile);
                    if (a.frames > 0)
                        f.frameProfiles.push_back(sum.frameProfile);
                }
            }
            layers.append(layer);
        }
        schemes.append(QJsonObject{{"scheme", a.schemes[s]}, {"geometry_sample", static_cast<double>(g.sample)}, {"layers", layers}});
    }
    QJsonArray layerList;
    for (int l : a.layers)
        layerList.append(l);
    r.json = QJsonObject{{"model", a.model},
                         {"source", a.source},
                         {"samples", static_cast<double>(measured)},
                         {"stream_samples", static_cast<double>(a.total)},
                         {"complete", measured == a.total},
                         {"grid", QJsonObject{{"rows", a.rows}, {"cols", a.cols}}},
                         {"frames", a.frames},
                         {"video_rule",
                          "videos: the map is the within-frame map (the video's attention summed over its temporal patches, "
                          "normalised); frame_profile is the mass per temporal patch on the most common patch count"},
                         {"layers", layerList},
                         {"intervals", "95% percentile bootstrap over samples, 1000 resamples, fixed seed"},
                         {"schemes", schemes}};
    if (!partial.isEmpty())
        r.json["partial_merge"] = partial;
    return r;
}

void writeBiasFiles(const QString& folder, const model::BiasAccumulation& a, const QJsonObject& partial)
{
    const BiasReport report = biasReport(a, partial);
    if (!QDir().mkpath(folder))
        throw io::IoError(folder.toStdString() + ": cannot create the folder");
    io::StagedFiles staged(folder);
    staged.stage("bias.png", report.figure(views::FigureFormat::Png));
    staged.stage("bias.svg", report.figure(views::FigureFormat::Svg));
    staged.stage("bias.pdf", report.figure(views::FigureFormat::Pdf));
    staged.stage("bias.csv", report.csv);
    staged.stage("bias.json", QJsonDocument(report.json).toJson());
    staged.stage("bias_state.json", QJsonDocument(a.toJson()).toJson(QJsonDocument::Compact));
    if (a.keepSamples)
        staged.stage("bias_samples.csv", biasSamplesCsv(a));
    staged.commit();
}

} // namespace ropescope::reports

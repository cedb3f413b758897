#include "app/cli/bench_attention.h"

#include "app/cli/attend_run.h"
#include "app/cli/bench_timing.h"
#include "app/cli/output.h"
#include "app/reports/map_pictures.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/analysis/own_prior.h"
#include "core/model/analysis/region_attention.h"
#include "core/model/analysis/relevancy.h"
#include "core/model/analysis/scheme_comparison.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "views/charts/attention_figures.h"
#include "views/charts/attention_heatmap.h"
#include "views/charts/region_chart.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>

namespace ropescope::cli {

int benchAttention(const QCommandLineParser& parser)
{
    const QString dir = io::bundledModel();
    const model::ModelBundle model = model::ModelBundle::load(dir);
    model::Vlm& vlm = *model.vlm;
    model::AttentionQuery query;
    query.images = {model::loadImage(io::sampleImage())};
    query.question = io::sampleQuestion();
    query.scheme = model.own;
    query.answerMaps = true;
    query.meanQueryKey = true;                                   // as the GUI runs it
    model::AttentionRun run = model::runAttention(model, query); // warms the vision cache
    const model::AttentionRequest& a = run.prompt;
    const views::HeatmapOptions heat;
    const size_t last = run.layers.size() - 1;
    const std::vector<model::SchemeEntry> schemes{
        {"mrope", {geometry::SchemeParams{}, ""}},
        {"circle alpha 0.3",
         [] {
             model::ModelScheme s;
             s.params.kind = geometry::SchemeKind::Circle;
             s.params.circle.alpha = 0.3;
             return s;
         }()},
        {"circle alpha 0.7",
         [] {
             model::ModelScheme s;
             s.params.kind = geometry::SchemeKind::Circle;
             s.params.circle.alpha = 0.7;
             return s;
         }()},
        {"vrope",
         [] {
             model::ModelScheme s;
             s.params.kind = geometry::SchemeKind::Vrope;
             return s;
         }()},
    };
    QImage canvas(600, 600, QImage::Format_RGB32);
    const std::vector<std::pair<const char*, std::function<void()>>> stages{
        {"run (all layers, answer maps)", [&] { run = model::runAttention(model, query); }},
        {"one token's map",
         [&] {
             const model::MapToken& t = run.questionTokens.front();
             views::attentionOverlay(reports::mapPictures(a.images), model::headMap(run.tokenAttention(last, t), {}), heat);
         }},
        {"own positional prior (mean over heads)",
         [&] {
             const model::OwnPrior p =
                 model::ownPositionalPrior(vlm, run, run.layers.back(), model::HeadChoice{}, run.questionTokens.back());
             views::attentionOverlay(reports::mapPictures(a.images), p.prior, heat);
         }},
        {"layers x heads grid",
         [&] {
             const views::LayerHeadGrid g = reports::layerHeadGrid(run);
             QPainter p(&canvas);
             views::paintLayerHeadGrid(p, QRectF(canvas.rect()), g);
         }},
        {"image region -> text (2x2 cells, chart)",
         [&] {
             // As the GUI does it on each drag step: the region's attention for every layer and token, then the chart.
             const model::CellRegion region{3, 3, 4, 4};
             const model::RegionAttention r = model::regionAttention(run, region.tokensIn(a), {});
             views::RegionChart chart;
             chart.image = views::outlineCells(reports::mapPictures(a.images), 0, region.cells(a.image().rows, a.image().cols));
             for (const model::MapToken& t : r.tokens)
                 chart.tokens << t.text;
             chart.layers = r.layers;
             chart.share = r.share;
             chart.area = r.area;
             QPainter p(&canvas);
             views::paintRegionChart(p, QRectF(canvas.rect()), chart);
         }},
        {"gradient relevancy (backward, all layers)",
         [&] {
             const model::Relevancy r = model::gradientRelevancy(vlm, run);
             views::attentionOverlay(reports::mapPictures(a.images), r.map, heat);
         }},
        {"two images: run, a map on each, shares",
         [&] {
             model::AttentionQuery two = query;
             two.images.push_back(query.images.front().mirrored(true, false));
             const model::AttentionRun both = model::runAttention(model, two);
             views::attentionOverlay(reports::mapPictures(both.prompt.images), model::headMap(both.attention()[last], {}), heat);
             for (const at::Tensor& probs : both.attention())
                 model::imageShares(probs, both.prompt.grids());
         }},
        {"schemes side by side (4)", [&] { model::compareSchemes(model, query, schemes, run.layers.back()); }},
    };
    QJsonArray rows;
    QByteArray text = "bundled model " + QDir(dir).dirName().toUtf8() + ", sample image and question, layout " +
        QByteArray::fromStdString(run.result.layout.toString()) + "\n";
    text += QByteArray("view").leftJustified(40) + QByteArray("min_ms").rightJustified(10) + QByteArray("median_ms").rightJustified(11) +
        QByteArray("runs").rightJustified(6) + "\n";
    for (const auto& [stage, fn] : stages) {
        const Timing t = timeIt(fn);
        rows.append(QJsonObject{{"stage", stage}, {"min_ms", t.minMs}, {"median_ms", t.medianMs}, {"runs", t.runs}});
        text += QByteArray(stage).leftJustified(40) + QByteArray::number(t.minMs, 'f', 2).rightJustified(10) +
            QByteArray::number(t.medianMs, 'f', 2).rightJustified(11) + QByteArray::number(t.runs).rightJustified(6) + "\n";
    }
    writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(rows).toJson() : text);
    return 0;
}

} // namespace ropescope::cli

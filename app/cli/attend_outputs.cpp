// The files an `attend` run writes beyond the heatmap: tensors, positions, per-token maps, the
// layers x heads grid.
#include "app/cli/attend_run.h"

#include "app/reports/attention_sheets.h"
#include "app/reports/attention_tables.h"
#include "app/reports/expert_usage_report.h"

#include "app/cli/output.h"
#include "app/reports/map_pictures.h"
#include "core/io/position_table_io.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/tensor_io.h"
#include "views/charts/attention_figures.h"
#include "views/charts/region_chart.h"

#include <torch/types.h>
#include <QJsonArray>
#include <QJsonDocument>

namespace ropescope::cli {
namespace {

QString schemeTitle(const model::AttentionRun& run)
{
    return model::schemeLabel(run.scheme);
}

} // namespace

QByteArray AttentionOutcome::tensorFile() const
{
    model::SafeTensorsWriter tensors;
    tensors.setMetadata("format", "pt");
    tensors.setMetadata("dims",
                        "attention: [captured layers, heads, query tokens, image tokens]; answer_attention: "
                        "[captured layers, heads, answer tokens, image tokens], row k from the query that produced answer token k; "
                        "image_grids: [images, 2] rows, cols per image, whose tokens are image_tokens in that order; masks: "
                        "[captured layers, query tokens, image tokens] uint8, what each layer's mask did to the cell (" +
                            model::keyMaskLegend() + "); answer_masks: the same for answer_attention");
    model::addTensor(tensors, "attention", torch::stack(run.attention(), 0).to(torch::kCPU));
    if (!run.answerAttention.empty())
        model::addTensor(tensors, "answer_attention", torch::stack(run.answerAttention, 0).to(torch::kCPU));
    if (!run.masks.question.empty())
        model::addTensor(tensors, "masks", torch::stack(run.masks.question, 0));
    if (!run.masks.answer.empty() && !run.answerAttention.empty())
        model::addTensor(tensors, "answer_masks", torch::stack(run.masks.answer, 0));
    model::addTensor(tensors, "layers", torch::tensor(std::vector<int64_t>(run.layers.begin(), run.layers.end()), torch::kInt64));
    model::addTensor(tensors, "query_tokens", torch::tensor(run.prompt.queryTokens, torch::kInt64));
    model::addTensor(tensors, "image_tokens", torch::tensor(run.prompt.imageTokens, torch::kInt64));
    std::vector<int64_t> grids; // [images, 2]: rows, cols of each image's merged grid; its tokens follow the previous image's
    for (const model::PromptImage& image : run.prompt.images)
        grids.insert(grids.end(), {image.rows, image.cols});
    model::addTensor(tensors, "image_grids", torch::tensor(grids, torch::kInt64).reshape({-1, 2}));
    model::addTensor(tensors, "input_ids", torch::tensor(run.prompt.ids, torch::kInt64));
    return tensors.bytes();
}

QByteArray AttentionOutcome::positionsCsv() const
{
    return io::positionTableCsv(run.result.layerTables.front());
}

QByteArray AttentionOutcome::tokenSheet(views::FigureFormat format) const
{
    const views::MapSheet sheet = reports::tokenSheet(run, heatIndex, head, heat, schemeTitle(run));
    const QSize size = views::mapSheetSize(sheet, reports::sheetCellWidth(run.prompt));
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, sheet); }, size, format, summary);
}

QByteArray AttentionOutcome::tokensJson() const
{
    const model::AttentionRequest& a = run.prompt;
    QJsonArray tokens;
    for (const model::MapToken& t : reports::sheetTokens(run)) {
        QJsonObject entry{{"index", static_cast<double>(t.index)},
                          {"id", static_cast<double>(t.id)},
                          {"text", t.text},
                          {"kind", t.answer ? "answer" : "question"}};
        QJsonArray layers;
        for (size_t k = 0; k < run.layers.size(); ++k) {
            const torch::Tensor rows = run.tokenAttention(k, t);
            const model::AttentionStats st = model::attentionStats(rows, a.grids());
            // The image tokens this token's row could not see at the layer (its window's cut): zeros that are the mask's.
            QJsonObject layer{
                {"layer", run.layers[k]},
                {"hidden_image_tokens", run.tokenMask(k, t).ge(static_cast<int>(model::KeyMask::Window)).sum().item<double>()},
                {"image_mass", st.imageMass},
                {"normalized_entropy", st.normalizedEntropy},
                {"centre_of_mass", QJsonObject{{"image", st.centreImage}, {"row", st.centreRow}, {"col", st.centreCol}}}};
            if (a.images.size() > 1) {
                QJsonArray shares;
                for (double v : model::imageShares(rows, a.grids()))
                    shares.append(v);
                layer["image_shares"] = shares;
            }
            layers.append(layer);
        }
        entry["per_layer"] = layers;
        tokens.append(entry);
    }
    QJsonObject root{{"answer", answer}, {"heatmap_layer", run.layers[heatIndex]}, {"tokens", tokens}};
    if (run.mapTokens().size() > reports::kMaxSheetMaps)
        root["truncated_to"] = static_cast<int>(reports::kMaxSheetMaps);
    return QJsonDocument(root).toJson();
}

QByteArray AttentionOutcome::layersHeadsFigure(views::FigureFormat format) const
{
    views::LayerHeadGrid grid = reports::layerHeadGrid(run);
    grid.title = "text -> image attention, layers x heads (mean over question tokens) - " + schemeTitle(run);
    const QSize size = views::layerHeadFigureSize(grid);
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintLayerHeadGrid(p, r, grid); }, size, format, summary);
}

QByteArray AttentionOutcome::expertUsageFigure(views::FigureFormat format) const
{
    const views::ExpertUsageGrid grid =
        reports::expertUsageGrid(experts,
                                 QString("where tokens go: %1 image and %2 text tokens over %3 experts (top-%4) - %5")
                                     .arg(experts.imageTokens)
                                     .arg(experts.textTokens)
                                     .arg(experts.experts)
                                     .arg(experts.topK)
                                     .arg(schemeTitle(run)));
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintExpertUsage(p, r, grid); },
                               views::expertUsageFigureSize(grid), format, summary);
}

QByteArray AttentionOutcome::expertUsageCsv() const
{
    return reports::expertUsageCsv(experts);
}

QByteArray AttentionOutcome::expertUsageJson() const
{
    return QJsonDocument(reports::expertUsageJson(experts)).toJson();
}

QByteArray AttentionOutcome::masksFigure(views::FigureFormat format) const
{
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintMaskChart(p, r, maskChart); },
                               views::maskChartSize(maskChart), format, summary);
}

QByteArray AttentionOutcome::layersHeadsCsv() const
{
    return reports::layersHeadsCsv(run);
}

QByteArray AttentionOutcome::ownPriorFigure(views::FigureFormat format) const
{
    const model::AttentionRequest& a = run.prompt;
    const size_t heads = ownPriors.size() / run.layers.size();
    views::MapSheet sheet;
    sheet.title = QString("model's own positional prior vs attention, layer %1, token #%2 %3 - %4")
                      .arg(run.layers[heatIndex])
                      .arg(ownPriorToken.index)
                      .arg(reports::visibleToken(ownPriorToken.text), schemeTitle(run));
    sheet.columns = 2;
    for (size_t h = 0; h < heads; ++h) {
        const model::OwnPrior& p = ownPriors[heatIndex * heads + h];
        sheet.maps.push_back({views::attentionOverlay(reports::mapPictures(a.images), p.prior, heat),
                              {QString("head %1: prior (mean q, k)").arg(h), QString("r = %1").arg(p.correlation, 0, 'f', 3)}});
        sheet.maps.push_back(
            {views::attentionOverlay(reports::mapPictures(a.images), p.actual, heat), {QString("head %1: attention").arg(h), QString()}});
    }
    const QSize size = views::mapSheetSize(sheet, reports::sheetCellWidth(a));
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, sheet); }, size, format, summary);
}

QByteArray AttentionOutcome::ownPriorCsv() const
{
    return reports::ownPriorCsv(run.layers, ownPriorToken, ownPriors);
}

QByteArray AttentionOutcome::regionFigure(views::FigureFormat format) const
{
    const model::RegionAttention& r = *region;
    views::RegionChart chart;
    const model::CellRegion& cells = *regionCells;
    chart.title = QString("which tokens attend %1rows %2-%3, columns %4-%5 - %6")
                      .arg(run.prompt.images.size() > 1 ? QString("image %1, ").arg(cells.image + 1) : QString())
                      .arg(std::min(cells.row0, cells.row1))
                      .arg(std::max(cells.row0, cells.row1))
                      .arg(std::min(cells.col0, cells.col1))
                      .arg(std::max(cells.col0, cells.col1))
                      .arg(schemeTitle(run));
    const model::PromptImage& image = run.prompt.images.at(static_cast<size_t>(cells.image));
    chart.image = views::outlineCells(reports::mapPictures(run.prompt.images), cells.image, cells.cells(image.rows, image.cols));
    for (const model::MapToken& t : r.tokens) {
        chart.tokens << reports::visibleToken(t.text);
        chart.answer.push_back(t.answer);
    }
    chart.layers = r.layers;
    chart.share = r.share;
    chart.shownLayer = static_cast<int>(heatIndex);
    chart.area = r.area;
    return views::renderFigure([&](QPainter& p, const QRectF& area) { views::paintRegionChart(p, area, chart); },
                               views::regionChartSize(chart), format, summary);
}

QByteArray AttentionOutcome::regionCsv() const
{
    return reports::regionCsv(*region);
}

} // namespace ropescope::cli

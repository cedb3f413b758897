// What AttentionPanel's views show of a run: the map of the chosen token, layer and head (attention, own prior or
// relevancy), the comparison with the own scheme, the region and layer-head views (runs: attention_panel_run.cpp).
#include "app/gui/attention_panel.h"

#include "app/gui/attention/attention_controls.h"
#include "app/gui/attention/attention_job.h"
#include "app/gui/attention/attention_panel_state.h"
#include "app/gui/attention/attention_runner.h"
#include "app/gui/attention/layer_heads_page.h"
#include "app/gui/attention/map_page.h"
#include "app/gui/attention/region_page.h"
#include "app/gui/attention/schemes_page.h"
#include "app/gui/bias_view.h"
#include "app/gui/file_dialogs.h"
#include "app/reports/map_pictures.h"
#include "core/geometry/frequency.h"
#include "core/io/atomic_file.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/analysis/layer_masks.h"
#include "core/model/analysis/own_prior.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"
#include "views/charts/chart_export.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace ropescope::gui {

namespace {

// The map's image tokens that the layer's mask hid from the rows it averages (one token's row, or every question row).
std::vector<uint8_t> hiddenOnMap(const model::AttentionRun& run, size_t layer, const model::MapToken* token)
{
    if (layer >= run.masks.question.size())
        return {};
    return model::hiddenKeys(token ? run.tokenMask(layer, *token).unsqueeze(0) : run.masks.question[layer]);
}

// Under the map, for a model with two kinds of layer (Gemma): the shown layer's kind, and what the hatching means.
QString maskWords(const model::AttentionRun& run, size_t layer, const std::vector<uint8_t>& hidden, bool oneToken)
{
    if (layer >= run.layerKinds.size() ||
        std::none_of(run.layerKinds.begin(), run.layerKinds.end(), [](const model::MaskKind& k) { return k.sliding; }))
        return {};
    const model::MaskKind& kind = run.layerKinds[layer];
    QString text = QString("layer %1: %2").arg(run.layers[layer]).arg(QString::fromStdString(kind.words()));
    if (kind.blocksOpen)
        text += ", an image's tokens see each other both ways";
    const QString legend = views::hiddenCellsLegend(hidden, run.layers[layer], QString::fromStdString(kind.words()),
                                                    oneToken ? "row of this token" : "question token");
    return legend.isEmpty() ? text + "; the mask hides no image token from this map" : text + "\n" + legend;
}

} // namespace

double AttentionPanel::shift() const
{
    if (!d->run || !d->run->ownResult)
        return 0;
    const size_t layer = shownLayer();
    const std::optional<int64_t> row = d->ownRow();
    if (d->token >= 0 && !row)
        return 0; // an answer token: the own scheme's run has no answer rows
    const at::Tensor own = d->run->ownResult->prefill.attentions[layer], shown = d->run->attention()[layer];
    return row ? model::attentionShift(own.narrow(1, *row, 1), shown.narrow(1, *row, 1)) : model::attentionShift(own, shown);
}

void AttentionPanel::showOwnPrior(bool on)
{
    ui_->mapType->setCurrentIndex(static_cast<int>(on ? MapType::OwnPrior : MapType::Attention));
}

double AttentionPanel::priorCorrelation() const
{
    return d->priorCorrelation;
}

MapType AttentionPanel::mapType() const
{
    return static_cast<MapType>(std::clamp(ui_->mapType->currentIndex(), 0, kMapTypes - 1));
}

void AttentionPanel::selectRegion(int row0, int col0, int row1, int col1, int image)
{
    region_->select(row0, col0, row1, col1, image);
}

void AttentionPanel::clearRegion()
{
    region_->clear();
    Q_EMIT settingsChanged();
}

std::vector<double> AttentionPanel::regionShares() const
{
    return region_->shares();
}

void AttentionPanel::showRegionInExplorer()
{
    const std::optional<session::ExplorerState> s =
        region_->inExplorer(d->scheme, d->model ? d->model->vlm->config().text.layers : d->scheme.ageLayers);
    if (!s) {
        fail("select an image region first (drag on the picture in the Region tab)");
        return;
    }
    Q_EMIT showInExplorer(*s);
}

void AttentionPanel::openLayerHead(int layer, int head)
{
    ui_->layer->setValue(sliderIndexOf(layer));
    ui_->head->setCurrentIndex(headComboIndex(head));
    views_->setCurrentIndex(static_cast<int>(AttentionView::Map));
}

void AttentionPanel::selectToken(int token)
{
    d->token = token;
    repaintOverlay();
}

int AttentionPanel::mapTokenCount() const
{
    return d->run ? static_cast<int>(d->mapTokens().size()) : 0;
}

void AttentionPanel::repaintTokens()
{
    // Tokens as links; the shown one bold on a highlight. Whitespace tokens get a visible stand-in.
    QString html = d->token < 0 ? "<b style=\"background:#ffe08a\">all</b>" : "<a href=\"all\">all</a>";
    const std::vector<model::MapToken> tokens = d->mapTokens();
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i].answer && (i == 0 || !tokens[i - 1].answer))
            html += " &rarr;";
        QString text = tokens[i].text.toHtmlEscaped();
        text.replace("\n", "\\n");
        if (text.trimmed().isEmpty())
            text = "&#9251;";
        html += static_cast<int>(i) == d->token ? QString(" <b style=\"background:#ffe08a\">%1</b>").arg(text)
                                                : QString(" <a href=\"%1\">%2</a>").arg(i).arg(text);
    }
    ui_->tokens->setText(html);
}

views::HeatmapOptions AttentionPanel::heatmapOptions() const
{
    views::HeatmapOptions o;
    o.opacity = ui_->opacity->value() / 100.0;
    o.gamma = ui_->gamma->value();
    o.smoothing = ui_->smoothing->value();
    o.colormap = ui_->colormap->currentIndex() == 1 ? views::HeatmapOptions::Colormap::Viridis : views::HeatmapOptions::Colormap::Jet;
    return o;
}

void AttentionPanel::repaintOverlay()
{
    if (!d->run)
        return;
    const model::AttentionRun& run = *d->run;
    const model::AttentionRequest& a = run.prompt;
    const size_t layer = shownLayer();
    const model::HeadChoice choice = headChoiceAt(ui_->head->currentIndex());
    const std::vector<model::MapToken> tokens = d->mapTokens();
    const bool oneToken = d->token >= 0 && d->token < static_cast<int>(tokens.size());
    const at::Tensor rows = oneToken ? run.tokenAttention(layer, tokens[static_cast<size_t>(d->token)]) : run.attention()[layer];
    const std::vector<float> grid = model::headMap(rows, choice);
    const views::HeatmapOptions o = heatmapOptions();
    const views::MapPictures pictures = reports::mapPictures(a.images);
    // Hatched: the image tokens this layer's mask hid from the map's rows (Gemma's sliding window), whose zeros are the
    // mask's, not the model's.
    const std::vector<uint8_t> hidden = hiddenOnMap(run, layer, oneToken ? &tokens[static_cast<size_t>(d->token)] : nullptr);
    overlay_ = views::hatchHiddenCells(views::attentionOverlay(pictures, grid, o), pictures, hidden);
    map_->showMask(maskWords(run, layer, hidden, oneToken));
    ui_->priorFit->clear();
    QStringList shares;
    if (a.images.size() > 1) {
        const std::vector<double> of = model::imageShares(rows, a.grids());
        for (size_t i = 0; i < of.size(); ++i)
            shares << QString("image %1: %2%").arg(i + 1).arg(100 * of[i], 0, 'f', 1);
    }
    map_->showShares(
        shares.isEmpty()
            ? QString()
            : QString("share of the image attention at layer %1 (mean over heads): %2").arg(run.layers[layer]).arg(shares.join(", ")));
    if (mapType() == MapType::OwnPrior && d->runModel) {
        // "all" has no single query: the prior is the row that predicts the answer (the question's last token).
        const model::MapToken token = oneToken ? tokens[static_cast<size_t>(d->token)] : run.questionTokens.back();
        const model::OwnPrior prior = model::ownPositionalPrior(*d->runModel->vlm, run, run.layers[layer], choice, token);
        overlay_ = views::attentionOverlay(pictures, prior.prior, o);
        d->priorCorrelation = prior.correlation;
        ui_->priorFit->setText(QString("own positional prior of '%1' (mean q, k): r = %2 with its attention")
                                   .arg(token.text.trimmed())
                                   .arg(prior.correlation, 0, 'f', 3));
    } else if (mapType() == MapType::Relevancy) {
        if (d->relevancy) {
            overlay_ = views::attentionOverlay(pictures, d->relevancy->map, o);
            // A token that decodes to nothing readable (a special or whitespace token) is named by its id: "relevancy of ''"
            // said nothing (issue 72 item 9).
            const QString target = d->runModel->tokenizer->decode({d->relevancy->target}).trimmed();
            ui_->priorFit->setText(
                QString("relevancy of %1 through all layers (attention x gradient; layer, head and token do not "
                        "apply): %2% of it on text; r = %3 with the answer row's attention, last layer")
                    .arg(target.isEmpty() ? QString("the answer's first token (id %1)").arg(d->relevancy->target) : "'" + target + "'")
                    .arg(100 * d->relevancy->textShare, 0, 'f', 1)
                    .arg(d->relevancy->attentionCorrelation, 0, 'f', 3));
        } else {
            ui_->priorFit->setText("computing the relevancy ...");
        }
    }
    map_->showMap(overlay_, o);
    repaintTokens();
    region_->show(static_cast<int>(layer), ui_->head->currentIndex());
    layerHeads_->select(static_cast<int>(layer), choice.kind == model::HeadChoice::Kind::Index ? choice.index : -1);
    const std::optional<int64_t> ownRow = d->ownRow();
    if (!run.ownResult || (oneToken && !ownRow)) { // the own scheme's run is a prefill: no answer tokens' rows
        ownOverlay_ = difference_ = QImage();
        map_->hideComparison();
        return;
    }
    const at::Tensor ownRows = run.ownResult->prefill.attentions[layer];
    const std::vector<float> own = model::headMap(ownRow ? ownRows.narrow(1, *ownRow, 1) : ownRows, choice);
    ownOverlay_ = views::hatchHiddenCells(views::attentionOverlay(pictures, own, o), pictures, hidden);
    difference_ = views::hatchHiddenCells(views::attentionDifferenceOverlay(pictures, own, grid, o), pictures, hidden);
    // The shift compares the mean maps whatever head the images show: say so.
    map_->showComparison(ownOverlay_, difference_,
                         QString("layer %1, mean over heads and %2: attention moved by %3 (total variation, 0 = same places, 1 = disjoint)")
                             .arg(run.layers[layer])
                             .arg(ownRow ? "'" + tokens[static_cast<size_t>(d->token)].text.trimmed() + "'" : QString("question tokens"))
                             .arg(shift(), 0, 'f', 3));
}

} // namespace ropescope::gui

// AttentionPanel's session settings and exports (its widgets: attention_panel.cpp; runs: attention_panel_run.cpp; maps: attention_panel_maps.cpp).
#include "app/gui/attention_panel.h"

#include "app/reports/attention_sheets.h"
#include "app/gui/attention/attention_controls.h"
#include "app/gui/attention/attention_panel_state.h"
#include "app/gui/attention/layer_heads_page.h"
#include "app/gui/attention/map_page.h"
#include "app/gui/attention/experts_page.h"
#include "app/gui/attention/region_page.h"
#include "app/gui/attention/schemes_page.h"
#include "app/gui/figure_export.h"
#include "app/gui/file_dialogs.h"
#include "core/io/atomic_file.h"
#include "views/charts/chart_export.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QJsonArray>
#include <QLineEdit>
#include <QMessageBox>
#include <QSignalBlocker>
#include <QSlider>

#include <stdexcept>

namespace ropescope::gui {

QJsonObject AttentionPanel::settings() const
{
    QStringList more;
    for (size_t i = 1; i < d->images.size(); ++i)
        more << d->images[i].path;
    QJsonArray schemes;
    for (const model::SchemeEntry& e : schemes_->entries())
        schemes.append(QJsonObject{{"label", e.label}, {"scheme", model::schemeToJson(e.scheme)}});
    return QJsonObject{{"model", d->model ? d->model->dir : QString()},
                       {"image", d->images.empty() ? QString() : d->images.front().path},
                       {"more_images", QJsonArray::fromStringList(more)},
                       {"question", ui_->question->text()},
                       {"explorer_scheme", ui_->explorerScheme->isChecked()},
                       {"compare", ui_->compare->isChecked()},
                       {"layer", modelLayer()},
                       {"head", ui_->head->currentIndex()},
                       {"map_type", mapTypeKey(mapType())},
                       {"colormap", ui_->colormap->currentText()},
                       {"opacity", ui_->opacity->value()},
                       {"gamma", ui_->gamma->value()},
                       {"smoothing", ui_->smoothing->value()},
                       {"region", region_->regionText()},
                       {"schemes", schemes}};
}

namespace {

// A session's side-by-side list; entries it cannot mean are dropped, the others kept. None without a list.
std::optional<std::vector<model::SchemeEntry>> schemesFromJson(const QJsonValue& value)
{
    if (!value.isArray())
        return std::nullopt;
    std::vector<model::SchemeEntry> schemes;
    for (const QJsonValue& v : value.toArray()) {
        const QJsonObject entry = v.toObject();
        if (schemes.size() == static_cast<size_t>(model::kMaxComparedSchemes) || !entry["label"].isString() || !entry["scheme"].isObject())
            continue;
        try {
            schemes.push_back({entry["label"].toString().left(200), model::schemeFromJson(entry["scheme"].toObject())});
        } catch (const std::exception&) { }
    }
    return schemes;
}

} // namespace

void AttentionPanel::applySettings(const QJsonObject& s)
{
    // Each setting independently: a model folder or image that is gone leaves the current one.
    const QSignalBlocker block(this); // no settingsChanged echo while restoring
    if (s["question"].isString())
        ui_->question->setText(s["question"].toString().left(4096));
    ui_->explorerScheme->setChecked(s["explorer_scheme"].toBool(ui_->explorerScheme->isChecked()));
    ui_->compare->setChecked(s["compare"].toBool(ui_->compare->isChecked()));
    if (s["colormap"].isString())
        ui_->colormap->setCurrentText(s["colormap"].toString());
    ui_->mapType->setCurrentIndex(static_cast<int>(mapTypeFromKey(s["map_type"].toString())));
    ui_->opacity->setValue(s["opacity"].toInt(ui_->opacity->value()));
    ui_->gamma->setValue(s["gamma"].toDouble(ui_->gamma->value()));
    ui_->smoothing->setValue(s["smoothing"].toDouble(ui_->smoothing->value()));
    std::optional<std::vector<model::SchemeEntry>> schemes = schemesFromJson(s["schemes"]);
    region_->restore(s["region"].toString());
    const QString image = s["image"].toString();
    QStringList more;
    for (const QJsonValue& v : s["more_images"].toArray())
        if (v.isString() && QFileInfo(v.toString()).isFile() && more.size() + 1 < model::kMaxPromptImages)
            more << v.toString();
    QStringList current;
    for (const PromptImageFile& file : d->images)
        current << file.path;
    if (!image.isEmpty() && QStringList{image} + more != current && QFileInfo(image).isFile() && setImage(image))
        for (const QString& path : more)
            addImage(path); // one that no longer reads is dropped
    const QString dir = s["model"].toString();
    const int layer = s["layer"].toInt(-1), head = s["head"].toInt(-1);
    if (!dir.isEmpty() && (!d->model || QFileInfo(dir).absoluteFilePath() != QFileInfo(d->model->dir).absoluteFilePath()) &&
        QFileInfo(dir + "/config.json").isFile()) {
        if (layer >= 0)
            d->restoredLayer = layer;
        if (head >= 0)
            d->restoredHead = head;
        d->runAfterLoad = false;
        d->restoredSchemes = schemes;
        openModel(dir);
        return;
    }
    if (schemes && d->model) // the model stays: its list is replaced now
        schemes_->setEntries(std::move(*schemes));
    else if (schemes)
        d->restoredSchemes = schemes; // the first model to load takes it
    if (std::find(d->attentionLayers.begin(), d->attentionLayers.end(), layer) != d->attentionLayers.end())
        ui_->layer->setValue(sliderIndexOf(layer));
    if (head >= 0 && head < ui_->head->count())
        ui_->head->setCurrentIndex(head);
}

// Every view exports what the CLI writes for it, with the run recorded in the file.
void AttentionPanel::connectExports()
{
    // A figure and its table, named as `attend` names them.
    auto exportFigure = [this](const QString& title, const QString& name, const views::ChartPainter& painter, QSize size,
                               const QByteArray& table) {
        QJsonObject meta = runMetadata();
        meta["figure"] = title;
        exportFigureWithDialog(this, "Export " + title, name, painter, size, meta, table);
    };
    connect(schemes_, &SchemesPage::exportRequested, this, [this, exportFigure] {
        exportFigure("schemes side by side", "schemes.png", schemes_->figure(), schemes_->figureSize(), schemes_->table());
    });
    connect(layerHeads_, &LayerHeadsPage::exportRequested, this, [this, exportFigure] {
        exportFigure("layers x heads", "layers_heads.png", layerHeads_->figure(), layerHeads_->figureSize(), layerHeads_->table());
    });
    connect(experts_, &ExpertsPage::exportRequested, this, [this, exportFigure] {
        exportFigure("expert usage", "expert_usage.png", experts_->figure(), experts_->figureSize(), experts_->table());
    });
    connect(region_, &RegionPage::exportRequested, this, [this, exportFigure] {
        exportFigure("image region", "region.png", region_->figure(), region_->figureSize(), region_->table());
    });
    connect(map_, &MapPage::exportMapRequested, this, [this] {
        const QString path = chooseSaveFile(this, "Export attention map", "attention.png", "PNG (*.png)");
        if (path.isEmpty())
            return;
        try {
            const QStringList written = exportHeatmaps(path);
            confirmExport(this, written.front(), written.value(1)); // in the window's status bar: the run's line stays
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
    connect(map_, &MapPage::exportTokensRequested, this, [this] {
        const QString path = chooseSaveFile(this, "Export per-token maps", "tokens.png", "Figures (*.png *.svg *.pdf)");
        if (path.isEmpty())
            return;
        try {
            exportTokenSheet(path);
            confirmExport(this, path);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
}

QJsonObject AttentionPanel::runMetadata() const
{
    QJsonArray images;
    for (const auto& image : d->images)
        images.append(QFileInfo(image.path).absoluteFilePath());
    return QJsonObject{{"model", d->runModel ? QFileInfo(d->runModel->dir).absoluteFilePath() : QString()},
                       {"images", images},
                       {"question", d->run ? d->answeredQuestion : ui_->question->text()},
                       {"answer", answer()},
                       {"run", d->runStatus}, // the run's own line, never an export's or another folder's error
                       {"layer", modelLayer()},
                       {"head", ui_->head->currentText()}};
}

void AttentionPanel::exportTokenSheet(const QString& path) const
{
    if (!d->run)
        throw std::runtime_error("no attention to export yet: run the model first");
    const views::MapSheet sheet = reports::tokenSheet(*d->run, shownLayer(), headChoiceAt(ui_->head->currentIndex()), heatmapOptions(),
                                                      QString::fromStdString(geometry::schemeLabel(d->run->scheme.params)));
    QJsonObject meta = runMetadata();
    meta["figure"] = "per-token maps";
    writeFigure(
        path, [sheet](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, sheet); },
        views::mapSheetSize(sheet, reports::sheetCellWidth(d->run->prompt)), meta);
}

QStringList AttentionPanel::exportHeatmaps(const QString& path) const
{
    if (overlay_.isNull())
        throw std::runtime_error("no attention to export yet: run the model first");
    QJsonObject meta = runMetadata();
    meta["colormap"] = ui_->colormap->currentText();
    meta["opacity"] = ui_->opacity->value() / 100.0;
    meta["gamma"] = ui_->gamma->value();
    meta["smoothing"] = ui_->smoothing->value();
    if (d->run && d->run->ownResult)
        meta["shift"] = shift();
    if (mapType() == MapType::OwnPrior) {
        meta["map"] = "own positional prior (mean q, k)";
        meta["prior_correlation"] = d->priorCorrelation;
    } else if (mapType() == MapType::Relevancy && d->relevancy) {
        meta["map"] = "gradient relevancy of the answer's first token (Chefer et al. 2021)";
        meta["relevancy_text_share"] = d->relevancy->textShare;
    }
    if (d->token >= 0)
        meta["token"] = d->mapTokens()[static_cast<size_t>(d->token)].text;
    QStringList written;
    if (!QDir().mkpath(QFileInfo(path).path()))
        throw std::runtime_error(QFileInfo(path).path().toStdString() + ": cannot create the folder");
    // Under each picture its colour bar and a caption: what was asked, answered and shown.
    // The map's own state (its token, layer, head, scheme), never the panel's status line, which may be another
    // view's ("compared 4 of 4 schemes at layer 3").
    const QString shownToken =
        d->token >= 0 ? QString("token '%1'").arg(d->mapTokens()[static_cast<size_t>(d->token)].text) : QString("all question tokens");
    const QString scheme = d->run ? QString::fromStdString(geometry::schemeLabel(d->run->scheme.params)) : QString();
    QStringList caption{
        "Q: " + meta["question"].toString() + "   A: " + answer(),
        QString("map of %1, layer %2, head %3, scheme %4").arg(shownToken).arg(modelLayer()).arg(ui_->head->currentText(), scheme)};
    if (meta.contains("map"))
        caption << meta["map"].toString();
    if (const QString mask = map_->maskText(); !mask.isEmpty()) { // Gemma: the layer's kind, and what the hatching means
        meta["mask"] = mask;
        caption << mask.split('\n');
    }
    auto write = [&](const QString& file, const QImage& image, const QString& figure) {
        QJsonObject m = meta;
        m["figure"] = figure;
        // At least kExportWidth px wide: the map itself was 252x140 in a 360x317 file (issue 72 item 6). Smooth scaling
        // keeps the overlay's already smoothed cells as they look on screen.
        constexpr int kExportWidth = 720;
        const QImage shown = image.width() >= kExportWidth ? image : image.scaledToWidth(kExportWidth, Qt::SmoothTransformation);
        m["map_size"] = QString("%1x%2").arg(shown.width()).arg(shown.height());
        io::writeFileAtomically(file, views::encodePng(views::captionedHeatmap(shown, heatmapOptions(), caption + QStringList{figure}), m));
        written << file;
    };
    write(path, overlay_, "heatmap");
    if (!ownOverlay_.isNull()) {
        const QFileInfo info(path);
        const QString stem = info.dir().filePath(info.completeBaseName());
        write(stem + "_own.png", ownOverlay_, "heatmap under the model's own scheme");
        write(stem + "_difference.png", difference_, "difference from the model's own scheme (red: more, blue: less)");
    }
    return written;
}

} // namespace ropescope::gui

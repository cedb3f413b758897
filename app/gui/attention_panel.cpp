// The Attention tab's widgets and inputs: its views and side column wired, the model, images, question and scheme
// taken in (runs: attention_panel_run.cpp; the maps drawn: attention_panel_maps.cpp; settings: attention_panel_settings.cpp).
#include "app/gui/attention_panel.h"

#include "app/gui/attention/attention_controls.h"
#include "app/gui/attention/attention_job.h"
#include "app/gui/attention/attention_panel_state.h"
#include "app/gui/attention/attention_runner.h"
#include "app/gui/attention/layer_heads_page.h"
#include "app/gui/attention/map_page.h"
#include "app/gui/attention/experts_page.h"
#include "app/gui/attention/region_page.h"
#include "app/gui/attention/schemes_page.h"
#include "app/gui/bias_view.h"
#include "app/gui/file_dialogs.h"
#include "app/reports/map_pictures.h"
#include "core/geometry/frequency.h"
#include "core/io/atomic_file.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/attention_stats.h"
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

#include <optional>
#include <stdexcept>

namespace ropescope::gui {

AttentionPanel::AttentionPanel(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>()), runner_(new AttentionRunner(this))
{
    auto* root = new QHBoxLayout(this);
    views_ = new QTabWidget;
    views_->setObjectName("attentionViews");
    views_->tabBar()->setObjectName("attentionViewTabs");
    map_ = new MapPage;
    layerHeads_ = new LayerHeadsPage;
    schemes_ = new SchemesPage;
    region_ = new RegionPage;
    experts_ = new ExpertsPage;
    bias_ = new BiasView;
    bias_->setObjectName("biasView");
    // Short names, so the tabs fit beside the side column at 1280x720; the tooltips say the rest.
    const struct {
        AttentionView view;
        QWidget* page;
        const char *name, *tip;
    } tabs[] = {
        {AttentionView::Map, map_, "Map", "text -> image attention (or the own prior, relevancy) of the chosen token, layer and head"},
        {AttentionView::LayerHeads, layerHeads_, "Layers \u00d7 heads", "every captured layer and head at once; click one to open it"},
        {AttentionView::Schemes, schemes_, "Schemes", "the same question under several schemes side by side"},
        {AttentionView::Region, region_, "Region", "which text tokens attend a region of the image (drag on the picture)"},
        {AttentionView::Bias, bias_, "Bias", "the attention averaged over many samples, per scheme and layer (ropescope bias)"},
        {AttentionView::Experts, experts_, "Experts",
         "where a mixture-of-experts model routes the image and the text tokens, per layer and expert"},
    };
    for (const auto& tab : tabs) {
        const int at = views_->addTab(tab.page, tab.name);
        Q_ASSERT(at == static_cast<int>(tab.view));
        views_->setTabToolTip(at, tab.tip);
    }
    // Every tab stays in sight, its name shortened ("Lay...") where the row is short of room, rather than the tab widget
    // asking for the width of every full name: after a mixture-of-experts run brought the Experts tab, that minimum pushed
    // the window past a 1280 px screen and the side column over the map (issue 72 items 1 and 2).
    views_->tabBar()->setElideMode(Qt::ElideRight);
    views_->tabBar()->setUsesScrollButtons(false);
    showExpertsView(false); // a dense model has none
    root->addWidget(views_, 1);
    ui_ = new AttentionControls;
    root->addWidget(ui_);
    connectControls();
    if (QFile::exists(io::bundledModel() + "/config.json"))
        setModel(io::bundledModel());
    setImage(io::sampleImage());
}

AttentionPanel::~AttentionPanel() = default;

void AttentionPanel::showExpertsView(bool shown)
{
    views_->setTabVisible(static_cast<int>(AttentionView::Experts), shown);
    if (!shown && views_->currentIndex() == static_cast<int>(AttentionView::Experts))
        views_->setCurrentIndex(static_cast<int>(AttentionView::Map));
}

void AttentionPanel::connectControls()
{
    connect(this, &AttentionPanel::runFinished, ui_->errorNote, [this](bool ok) {
        if (ok)
            ui_->errorNote->hide();
    });
    connect(ui_->question, &QLineEdit::textChanged, this, &AttentionPanel::updateQuestionNote);
    connect(ui_->layer, &QSlider::valueChanged, this, [this] { ui_->layerNumber->setNum(modelLayer()); });
    connect(ui_->tokens, &QLabel::linkActivated, this, [this](const QString& link) { selectToken(link == "all" ? -1 : link.toInt()); });
    connect(ui_->run, &QPushButton::clicked, this, &AttentionPanel::requestRun);
    // Everything settings() holds: the window saves it with the session.
    connect(ui_->question, &QLineEdit::editingFinished, this, &AttentionPanel::settingsChanged);
    for (QCheckBox* c : {ui_->explorerScheme, ui_->compare})
        connect(c, &QCheckBox::toggled, this, &AttentionPanel::settingsChanged);
    for (QSlider* s : {ui_->layer, ui_->opacity})
        connect(s, &QSlider::valueChanged, this, &AttentionPanel::settingsChanged);
    for (QComboBox* c : {ui_->head, ui_->colormap, ui_->mapType})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::settingsChanged);
    for (QDoubleSpinBox* s : {ui_->gamma, ui_->smoothing})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &AttentionPanel::settingsChanged);
    connect(ui_->question, &QLineEdit::returnPressed, this, &AttentionPanel::requestRun);
    connect(ui_->explorerScheme, &QCheckBox::toggled, this, [this](bool on) {
        ui_->compare->setEnabled(on); // the model's own scheme compared with itself shows nothing
        if (d->engaged)
            requestRun();
    });
    connect(ui_->compare, &QCheckBox::toggled, this, [this] {
        if (d->engaged)
            requestRun();
    });
    connect(ui_->openModel, &QPushButton::clicked, this, [this] {
        const QString dir = chooseFolder(this, "Model folder");
        if (!dir.isEmpty())
            openModel(dir);
    });
    connect(ui_->openImage, &QPushButton::clicked, this, [this] {
        const QString path = chooseOpenFile(this, "Image", "Images (*.png *.jpg *.jpeg *.bmp *.webp)");
        if (!path.isEmpty() && setImage(path))
            requestRun();
    });
    connect(ui_->addImage, &QPushButton::clicked, this, [this] {
        const QString path = chooseOpenFile(this, "Further image", "Images (*.png *.jpg *.jpeg *.bmp *.webp)");
        if (!path.isEmpty() && addImage(path))
            requestRun();
    });
    connect(runner_, &AttentionRunner::loaded, this, [this](std::shared_ptr<AttentionModel> model) {
        const QString loaded = QString("loaded %1 in %2").arg(QFileInfo(model->dir).fileName(), durationText(seconds(d->loadClock)));
        installModel(std::move(model));
        setStatus(loaded);
        if (d->runAfterLoad || d->engaged) {
            d->loaded = loaded; // the run's status says it again, before its own time
            requestRun();
        }
        d->runAfterLoad = true;
    });
    connect(runner_, &AttentionRunner::loadFailed, this, [this](const QString& message) {
        Q_EMIT runFinished(fail(message)); // the model in use stays
    });
    connect(runner_, &AttentionRunner::finished, this, [this](std::shared_ptr<AttentionJob> job) { Q_EMIT runFinished(finish(*job)); });
    connect(runner_, &AttentionRunner::rerun, this, &AttentionPanel::requestRun);
    for (QSlider* s : {ui_->layer, ui_->opacity})
        connect(s, &QSlider::valueChanged, this, &AttentionPanel::repaintOverlay);
    for (QComboBox* c : {ui_->head, ui_->colormap, ui_->mapType})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::repaintOverlay);
    connect(ui_->mapType, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        if (mapType() == MapType::Relevancy && d->run && !d->relevancy && d->engaged)
            requestRun(); // the backward pass runs on the worker, with the model
    });
    for (QDoubleSpinBox* s : {ui_->gamma, ui_->smoothing})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &AttentionPanel::repaintOverlay);
    connect(layerHeads_, &LayerHeadsPage::opened, this, &AttentionPanel::openLayerHead);
    connect(schemes_, &SchemesPage::addRequested, this, &AttentionPanel::addExplorerScheme);
    connect(schemes_, &SchemesPage::compareRequested, this, &AttentionPanel::requestCompare);
    connect(schemes_, &SchemesPage::cancelRequested, runner_, &AttentionRunner::cancel);
    connect(schemes_, &SchemesPage::edited, this, &AttentionPanel::settingsChanged);
    connect(region_, &RegionPage::edited, this, &AttentionPanel::settingsChanged);
    connect(region_, &RegionPage::showInExplorerRequested, this, &AttentionPanel::showRegionInExplorer);
    connectExports();
}

void AttentionPanel::installModel(std::shared_ptr<const AttentionModel> model)
{
    d->model = std::move(model);
    const AttentionModel& m = *d->model;
    bias_->setModel(m.dir);
    runner_->supersede(); // a run of the previous model that is still going is dropped
    clearRun();
    // The side-by-side list starts from the model's own scheme: the reference the others shift from. The schemes
    // the user added stay, compared under the new model (issue 56 item 12: a new model dropped them silently).
    std::vector<model::SchemeEntry> schemes{{model::schemeLabel(m.own) + " (own)", m.own}};
    for (const model::SchemeEntry& e : schemes_->entries()) // but the previous model's own
        if (!e.label.endsWith(" (own)") && schemes.size() < static_cast<size_t>(model::kMaxComparedSchemes))
            schemes.push_back(e);
    if (d->restoredSchemes) {
        schemes = std::move(*d->restoredSchemes);
        d->restoredSchemes.reset();
    }
    schemes_->setEntries(std::move(schemes));
    schemes_->showHint();
    // A bundled task model was trained by RopeScope under its scheme; a checkpoint from elsewhere has its own
    // rotary, whose allocation is part of it (Qwen3-VL and Qwen3.5: interleaved M-RoPE, not plain mrope).
    QString own = QString::fromStdString(geometry::schemeLabel(m.own.params));
    if (m.own.params.allocationKind)
        own += QString(", %1 allocation").arg(geometry::allocationKindName(*m.own.params.allocationKind));
    else if (m.vlm->config().text.mropeInterleaved)
        own += ", interleaved M-RoPE (MRoPE-I)";
    ui_->modelName->setText(
        wrappable(QFileInfo(m.dir).fileName() + (m.taskModel ? " (trained with " : " (its own positions: ") + own + ")"));
    ui_->modelInputs->setVisible(m.taskModel);
    updateQuestionNote();
    d->attentionLayers = m.vlm->config().text.attentionLayers();
    ui_->layer->setRange(0, static_cast<int>(d->attentionLayers.size()) - 1);
    ui_->layer->setValue(d->restoredLayer ? sliderIndexOf(*d->restoredLayer) : ui_->layer->maximum());
    ui_->layerNumber->setNum(modelLayer());
    ui_->head->clear();
    ui_->head->addItems(headItems(m.vlm->config().text.heads));
    if (d->restoredHead && *d->restoredHead < ui_->head->count())
        ui_->head->setCurrentIndex(*d->restoredHead);
    d->restoredLayer.reset();
    d->restoredHead.reset();
}

void AttentionPanel::updateQuestionNote()
{
    markStaleAnswer();
    const QString note = d->model ? model::unknownWordsNote(d->model->tokenizer->unknownWords(ui_->question->text())) : QString();
    ui_->questionNote->setText(wrappable(note));
    ui_->questionNote->setVisible(!note.isEmpty());
}

bool AttentionPanel::setModel(const QString& dir)
{
    QElapsedTimer clock;
    clock.start();
    const std::shared_ptr<AttentionModel> loaded = runner_->loadNow(dir);
    if (!loaded->error.isEmpty())
        return fail(loaded->error);
    installModel(loaded);
    // The first run says how long the load took, as one in the background does (GUI.md's "loaded ... in ...").
    d->loaded = QString("loaded %1 in %2").arg(QFileInfo(dir).fileName(), durationText(seconds(clock)));
    return true;
}

void AttentionPanel::openModel(const QString& dir)
{
    setStatus("loading " + dir + " ...");
    d->loadClock.start();
    runner_->load(dir);
}

bool AttentionPanel::setImage(const QString& path)
{
    return takeImage(path, false);
}

bool AttentionPanel::addImage(const QString& path)
{
    if (imageCount() >= model::kMaxPromptImages)
        return fail(QString("a prompt takes at most %1 images: open one with Image... to start again").arg(model::kMaxPromptImages));
    return takeImage(path, true);
}

bool AttentionPanel::takeImage(const QString& path, bool further)
{
    QImage image;
    try {
        image = model::loadImage(path);
    } catch (const model::ModelError& e) {
        return fail(e.what()); // the prompt's images stay as they were
    }
    if (!further)
        d->images.clear();
    d->images.push_back({path, image});
    runner_->supersede();
    Q_EMIT settingsChanged();
    showImages();
    return true;
}

int AttentionPanel::imageCount() const
{
    return static_cast<int>(d->images.size());
}

void AttentionPanel::showImages()
{
    // Until a run draws the maps: the prompt's images side by side at one height, as the maps will be.
    std::vector<QImage> images;
    for (const PromptImageFile& file : d->images)
        images.push_back(file.image);
    map_->showPictures(images);
}

void AttentionPanel::setQuestion(const QString& q)
{
    ui_->question->setText(q);
    Q_EMIT settingsChanged();
}

void AttentionPanel::setScheme(const session::ExplorerState& state)
{
    // Only the scheme and its AGE schedule reach the model: a new camera, colour or selection re-runs nothing.
    const bool schemeChanged = state.params != d->scheme.params || state.age != d->scheme.age;
    d->scheme = state;
    if (!schemeChanged || !d->engaged || !ui_->explorerScheme->isChecked())
        return;
    if (isVisible())
        requestRun();
    else
        d->staleWhileHidden = true;
}

void AttentionPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (d->staleWhileHidden) {
        d->staleWhileHidden = false;
        requestRun();
    }
}

void AttentionPanel::useExplorerScheme(bool on)
{
    ui_->explorerScheme->setChecked(on);
}

void AttentionPanel::compareWithOwnScheme(bool on)
{
    ui_->compare->setChecked(on);
}

int AttentionPanel::layers() const
{
    return d->run ? static_cast<int>(d->run->attention().size()) : 0;
}

int AttentionPanel::modelLayer() const
{
    return d->attentionLayers.at(static_cast<size_t>(std::clamp(ui_->layer->value(), 0, static_cast<int>(d->attentionLayers.size()) - 1)));
}

int AttentionPanel::sliderIndexOf(int layer) const
{
    const auto at = std::find(d->attentionLayers.begin(), d->attentionLayers.end(), layer);
    return at == d->attentionLayers.end() ? ui_->layer->maximum() : static_cast<int>(at - d->attentionLayers.begin());
}

size_t AttentionPanel::shownLayer() const
{
    return static_cast<size_t>(std::clamp(ui_->layer->value(), 0, std::max(layers() - 1, 0)));
}

QString AttentionPanel::answer() const
{
    return d->run ? d->run->answer : QString();
}

} // namespace ropescope::gui

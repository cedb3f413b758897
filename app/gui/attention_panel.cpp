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
    map_ = new MapPage;
    layerHeads_ = new LayerHeadsPage;
    schemes_ = new SchemesPage;
    region_ = new RegionPage;
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
    };
    for (const auto& tab : tabs) {
        const int at = views_->addTab(tab.page, tab.name);
        Q_ASSERT(at == static_cast<int>(tab.view));
        views_->setTabToolTip(at, tab.tip);
    }
    // Wide enough for every view's tab: the side column gives way (down to its minimum) before the tabs scroll.
    views_->setMinimumWidth(views_->tabBar()->sizeHint().width() + 2 * views_->style()->pixelMetric(QStyle::PM_DefaultFrameWidth) + 4);
    root->addWidget(views_, 1);
    ui_ = new AttentionControls;
    ui_->status->installEventFilter(this); // its height follows its width (fitStatus)
    root->addWidget(ui_);
    connectControls();
    if (QFile::exists(io::bundledModel() + "/config.json"))
        setModel(io::bundledModel());
    setImage(io::sampleImage());
}

AttentionPanel::~AttentionPanel() = default;

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
        installModel(std::move(model));
        if (d->runAfterLoad || d->engaged)
            requestRun();
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
    d->run.reset();
    d->token = -1;
    // The side-by-side list starts from the model's own scheme: the reference the others shift from.
    std::vector<model::SchemeEntry> schemes{{model::schemeLabel(m.own) + " (own)", m.own}};
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
    ui_->modelName->setText(QFileInfo(m.dir).fileName() + (m.taskModel ? " (trained with " : " (its own positions: ") + own + ")");
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

namespace {

// An empty answer says why (issue 45: "(empty)" alone gave no reason).
QString emptyAnswerWords(const model::ModelBundle* bundle, const model::AttentionRun& run)
{
    const QString reason = bundle ? model::emptyAnswerReason(*bundle->tokenizer, run.generated, bundle->vlm->config().eos) : QString();
    return reason.isEmpty() ? QString("(empty)") : "(empty: " + reason + ")";
}

} // namespace

void AttentionPanel::markStaleAnswer()
{
    // An answer stays beside the question it answered: once the question is edited it is greyed and says so.
    const bool stale = d->run && ui_->question->text() != d->answeredQuestion;
    ui_->answer->setEnabled(!stale);
    const QString shown = d->run ? (d->run->answer.isEmpty() ? emptyAnswerWords(d->model.get(), *d->run) : d->run->answer) : QString();
    ui_->answer->setText(stale ? shown + " (previous question)" : shown);
    ui_->answer->setToolTip(stale ? "The answer to '" + d->answeredQuestion + "'; Run to ask the edited question" : QString());
}

void AttentionPanel::updateQuestionNote()
{
    markStaleAnswer();
    const QString note = d->model ? model::unknownWordsNote(d->model->tokenizer->unknownWords(ui_->question->text())) : QString();
    ui_->questionNote->setText(note);
    ui_->questionNote->setVisible(!note.isEmpty());
}

bool AttentionPanel::setModel(const QString& dir)
{
    const std::shared_ptr<AttentionModel> loaded = runner_->loadNow(dir);
    if (!loaded->error.isEmpty())
        return fail(loaded->error);
    installModel(loaded);
    return true;
}

void AttentionPanel::openModel(const QString& dir)
{
    setStatus("loading " + dir + " ...");
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

bool AttentionPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == ui_->status && event->type() == QEvent::Resize)
        fitStatus();
    return QWidget::eventFilter(watched, event);
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

double AttentionPanel::shift() const
{
    if (!d->run || !d->run->ownResult)
        return 0;
    const size_t layer = shownLayer();
    const std::optional<int64_t> row = d->ownRow();
    if (d->token >= 0 && !row)
        return 0; // an answer token: the own scheme's run has no answer rows
    const torch::Tensor own = d->run->ownResult->prefill.attentions[layer], shown = d->run->attention()[layer];
    return row ? model::attentionShift(own.narrow(1, *row, 1), shown.narrow(1, *row, 1)) : model::attentionShift(own, shown);
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

QString AttentionPanel::status() const
{
    return ui_->status->text();
}

void AttentionPanel::setStatus(const QString& text)
{
    ui_->status->setText(text);
    fitStatus();
}

void AttentionPanel::fitStatus()
{
    // A word-wrapped label in a scroll area is laid out at its one-line height: the scroll area asks for the
    // panel's minimum size without height-for-width, so a long status (model notes, GLM-V's rotary) was cut
    // off with no scroll bar. Its minimum height follows the width it has.
    QLabel* status = ui_->status;
    const int width = status->width() > 0 ? status->width() : status->parentWidget() ? status->parentWidget()->width() : 0;
    if (width > 0)
        status->setMinimumHeight(status->heightForWidth(width));
}

bool AttentionPanel::busy() const
{
    return runner_->busy();
}

bool AttentionPanel::fail(const QString& message)
{
    setStatus(message);
    // The status line sits at the bottom of a scrolled column, out of sight at 1280x720: say it at the top too.
    ui_->errorNote->setText(message);
    ui_->errorNote->setToolTip(message);
    ui_->errorNote->show();
    Q_EMIT errorShown(message);
    return false;
}

std::shared_ptr<AttentionJob> AttentionPanel::prepare()
{
    if (!d->model)
        throw std::runtime_error("no model: open one (the bundled models live in resources/models)");
    if (d->images.empty())
        throw std::runtime_error("no image");
    d->engaged = true;
    auto job = std::make_shared<AttentionJob>();
    job->model = d->model;
    job->generation = runner_->nextGeneration();
    model::AttentionQuery& q = job->query;
    for (const PromptImageFile& file : d->images)
        q.images.push_back(file.image);
    q.question = ui_->question->text();
    q.preprocess = d->model->preprocess;
    const bool explorer = ui_->explorerScheme->isChecked();
    q.scheme = explorer ? model::ModelScheme{d->scheme.params, d->scheme.age} : d->model->own;
    q.answerMaps = true;   // every answer token's map: the rows cost little next to the run
    q.meanQueryKey = true; // the own positional prior: one mean over the tokens per layer
    q.compareOwn = explorer && ui_->compare->isChecked();
    job->relevancy = mapType() == MapType::Relevancy;
    job->schemeText = "scheme " + model::schemeLabel(q.scheme);
    return job;
}

bool AttentionPanel::finish(AttentionJob& job)
{
    if (!job.error.isEmpty())
        return fail(job.error);
    if (job.comparison) {
        schemes_->showComparison(*job.comparison, heatmapOptions());
        const int done = static_cast<int>(job.comparison->rows.size());
        setStatus(QString("compared %1 of %2 schemes at layer %3").arg(done).arg(job.schemes.size()).arg(job.comparedLayer));
        return done == static_cast<int>(job.schemes.size());
    }
    d->run = std::make_shared<const model::AttentionRun>(std::move(*job.run));
    d->runModel = job.model;
    d->relevancy = std::move(job.relevancyOf);
    const model::AttentionRun& r = *d->run;
    region_->setRun(d->run);
    d->token = -1;
    QString status = job.schemeText + ", layout " + QString::fromStdString(r.result.layout.toString()) + ", allocation " +
        QString::fromStdString(r.result.layerTables.front().allocation.toString());
    const geometry::RotaryConfig& rotary = r.result.layerTables.front().rotary;
    if (rotary.pairing != geometry::RotaryPairing::Half || rotary.unrotatedDims() > 0) // GLM-V: say how its heads rotate
        status += QString(", %1 of %2 dims rotate on %3 pairs")
                      .arg(rotary.rotaryDim())
                      .arg(rotary.headDim)
                      .arg(geometry::rotaryPairingName(rotary.pairing));
    if (!r.result.deepstackEmbeds.empty()) // Qwen3-VL: image features also enter the residual stream after these layers
        status += QString(", DeepStack after layers 0-%1").arg(r.result.deepstackEmbeds.size() - 1);
    const model::ModelConfig& config = job.model->vlm->config();
    if (config.text.moe.any()) // the family and its mixture: "qwen3_5_moe, MoE: 256 experts, top-8 + a shared expert"
        status += "\n" + QString::fromStdString(config.modelType + ", " + model::moeNote(config.text));
    for (const std::string& note : {model::hybridNote(config.text), job.model->vlm->unusedNote()})
        if (!note.empty())
            status += "\n" + QString::fromStdString(note);
    if (!r.untrained.empty())
        status += "\nuntrained scheme (" + QString::fromStdString(r.untrained) + "): this model was trained with " +
            QString::fromStdString(geometry::schemeLabel(r.own.params));
    d->answeredQuestion = job.query.question;
    ui_->answer->setText(r.answer.isEmpty() ? emptyAnswerWords(job.model.get(), r) : r.answer);
    markStaleAnswer();
    setStatus(status);
    layerHeads_->setRun(d->run);
    repaintOverlay();
    return true;
}

bool AttentionPanel::run()
{
    bool ok = false;
    try {
        const std::shared_ptr<AttentionJob> job = prepare();
        runner_->runNow(*job);
        ok = finish(*job);
    } catch (const std::exception& e) {
        ok = fail(e.what());
    }
    Q_EMIT runFinished(ok);
    return ok;
}

void AttentionPanel::requestRun()
{
    if (runner_->defer())
        return; // collapses into one rerun with the newest inputs
    std::shared_ptr<AttentionJob> job;
    try {
        job = prepare();
    } catch (const std::exception& e) {
        Q_EMIT runFinished(fail(e.what()));
        return;
    }
    setStatus(job->schemeText + ": running...");
    runner_->start(job);
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

void AttentionPanel::addExplorerScheme()
{
    const geometry::SchemeParams& p = d->scheme.params;
    QString label = model::schemeLabel({p, d->scheme.age});
    if (p.kind == geometry::SchemeKind::Circle && !p.custom) // two Circle-RoPEs side by side differ in alpha
        label.insert(static_cast<int>(geometry::schemeLabel(p).size()), QString(" alpha %1").arg(p.circle.alpha));
    if (!schemes_->add({label, {p, d->scheme.age}})) {
        fail(QString("at most %1 schemes side by side: remove one first").arg(model::kMaxComparedSchemes));
        return;
    }
    Q_EMIT settingsChanged();
}

int AttentionPanel::comparedSchemes() const
{
    return static_cast<int>(schemes_->entries().size());
}

std::vector<double> AttentionPanel::comparedShifts() const
{
    return schemes_->shifts();
}

void AttentionPanel::requestCompare()
{
    if (busy()) {
        fail("the model is busy: compare again when this run is done");
        return;
    }
    if (schemes_->entries().empty()) {
        fail("add schemes to compare first (\"Add explorer's scheme\" takes the one set in the Parameters panel)");
        return;
    }
    std::shared_ptr<AttentionJob> job;
    try {
        job = prepare();
    } catch (const std::exception& e) {
        fail(e.what());
        return;
    }
    job->schemes = schemes_->entries();
    job->comparedLayer = modelLayer();
    QPointer<QLabel> status = ui_->status;
    job->progress = [status](int done, int total) { // from the worker: the label is updated on the UI thread
        QMetaObject::invokeMethod(
            status,
            [status, done, total] {
                if (status && done < total)
                    status->setText(QString("comparing schemes: %1 of %2 ...").arg(done + 1).arg(total));
            },
            Qt::QueuedConnection);
    };
    schemes_->setRunning(true);
    runner_->start(job);
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
    const torch::Tensor rows = oneToken ? run.tokenAttention(layer, tokens[static_cast<size_t>(d->token)]) : run.attention()[layer];
    const std::vector<float> grid = model::headMap(rows, choice);
    const views::HeatmapOptions o = heatmapOptions();
    const views::MapPictures pictures = reports::mapPictures(a.images);
    overlay_ = views::attentionOverlay(pictures, grid, o);
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
            ui_->priorFit->setText(QString("relevancy of '%1' through all layers (attention x gradient; layer, head and token do not "
                                           "apply): %2% of it on text; r = %3 with the answer row's attention, last layer")
                                       .arg(d->runModel->tokenizer->decode({d->relevancy->target}).trimmed())
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
    const torch::Tensor ownRows = run.ownResult->prefill.attentions[layer];
    const std::vector<float> own = model::headMap(ownRow ? ownRows.narrow(1, *ownRow, 1) : ownRows, choice);
    ownOverlay_ = views::attentionOverlay(pictures, own, o);
    difference_ = views::attentionDifferenceOverlay(pictures, own, grid, o);
    // The shift compares the mean maps whatever head the images show: say so.
    map_->showComparison(ownOverlay_, difference_,
                         QString("layer %1, mean over heads and %2: attention moved by %3 (total variation, 0 = same places, 1 = disjoint)")
                             .arg(run.layers[layer])
                             .arg(ownRow ? "'" + tokens[static_cast<size_t>(d->token)].text.trimmed() + "'" : QString("question tokens"))
                             .arg(shift(), 0, 'f', 3));
}

} // namespace ropescope::gui

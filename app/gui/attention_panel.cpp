#include "attention_panel.h"

#include "bias_view.h"

#include "file_dialogs.h"
#include "map_pictures.h"
#include "charts/attention_heatmap.h"
#include "charts/chart_export.h"
#include "charts/region_chart.h"
#include "widgets/chart_view.h"
#include "io/atomic_file.h"
#include "geometry/errors.h"
#include "io/resource_paths.h"
#include "model/attend_request.h"
#include "model/attention_run.h"
#include "model/scheme_comparison.h"
#include "model/attention_stats.h"
#include "model/own_prior.h"
#include "model/region_attention.h"
#include "model/relevancy.h"
#include "model/bundled_model.h"
#include "model/image_processor.h"
#include "model/tokenizer.h"
#include "model/vlm.h"
#include "model/synthetic_task.h"

#include <QBuffer>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPainter>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <functional>
#include <optional>
#include <stdexcept>

namespace ropescope::gui {

struct AttentionPanel::Job {
    // Built on the UI thread.
    std::shared_ptr<model::Vlm> vlm; // shared: a model replaced mid-run lives until its run ends
    std::shared_ptr<const model::Tokenizer> tokenizer;
    QString modelDir;
    model::AttentionQuery query;
    std::vector<model::SchemeEntry> schemes; // not empty: compare these side by side instead
    int comparedLayer = 0;
    bool relevancy = false; // also the answer's gradient relevancy (a backward pass over the prompt)
    quint64 generation = 0;
    QString schemeText;
    std::function<void(int, int)> progress; // called on the worker
    std::atomic<bool> cancelled{false};
    // Filled by the worker.
    std::optional<model::AttentionRun> run;
    std::optional<model::SchemeComparison> comparison;
    std::optional<model::Relevancy> relevancyOf;
    QString error;

    void execute()
    {
        try {
            if (schemes.empty()) {
                run = model::runAttention(*vlm, *tokenizer, modelDir, query);
                if (relevancy)
                    relevancyOf = model::gradientRelevancy(*vlm, *run);
                return;
            }
            comparison = model::compareSchemes(*vlm, *tokenizer, modelDir, query, schemes, comparedLayer, [this](int done, int total) {
                if (progress)
                    progress(done, total);
                return !cancelled.load();
            });
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
};

// A model folder loaded off the UI thread; installed only when everything in it loaded.
struct AttentionPanel::LoadedModel {
    QString dir;
    std::shared_ptr<model::Vlm> vlm;
    std::shared_ptr<const model::Tokenizer> tokenizer;
    QString error;
};

struct AttentionPanel::Impl {
    QString modelDir;
    std::shared_ptr<model::Vlm> vlm;
    std::shared_ptr<const model::Tokenizer> tokenizer;
    QImage image;
    QString imagePath;
    std::vector<QImage> moreImages; // the prompt's further images (Add image...), after `image`
    QStringList moreImagePaths;
    session::ExplorerState scheme;
    std::optional<model::AttentionRun> run; // the shown run: every layer, answer tokens' rows included
    std::shared_ptr<const model::Vlm> runVlm; // the model that made it (its rotary settings for the own prior)
    int token = -1;                         // the map's token: -1 for all question tokens, else into mapTokens()
    double priorCorrelation = 0;            // of the own prior shown
    std::vector<model::SchemeEntry> schemes; // the side-by-side list
    std::optional<model::SchemeComparison> comparison;
    // The small multiples of the shown run, shared with the view's painter (repaints follow slider ticks:
    // no copy of every head's map per tick).
    std::shared_ptr<views::LayerHeadGrid> layerHeads = std::make_shared<views::LayerHeadGrid>();
    std::optional<model::Relevancy> relevancy;      // of the shown run, when the map type asked for it
    std::optional<model::CellRegion> region;        // the selected cells (also while dragging)
    std::optional<model::RegionAttention> regionOf; // of the shown run, layer-independent; for regionHead
    int regionHead = -1;
    std::shared_ptr<views::RegionChart> regionChart = std::make_shared<views::RegionChart>();
    QString answer, status;

    // The selected token's row among the question rows both schemes' runs keep; none for "all" (-1) and
    // for answer tokens (the own scheme's run is a prefill only).
    std::optional<int64_t> ownRow() const
    {
        if (!run || token < 0 || token >= static_cast<int>(run->questionTokens.size()))
            return std::nullopt; // question tokens come first in mapTokens()
        const std::vector<int64_t>& rows = run->prompt.queryTokens;
        const auto at = std::find(rows.begin(), rows.end(), run->questionTokens[static_cast<size_t>(token)].index);
        return at == rows.end() ? std::nullopt : std::optional<int64_t>(at - rows.begin());
    }
    std::vector<model::MapToken> mapTokens() const
    {
        std::vector<model::MapToken> all = run->questionTokens;
        all.insert(all.end(), run->answerTokens.begin(), run->answerTokens.end());
        return all;
    }
    // Background runs: one at a time (a Vlm is not re-entrant); requests during a run collapse into one
    // rerun with the newest inputs; results of a superseded model, image or blocking run are dropped.
    QFutureWatcher<void> watcher;
    QFutureWatcher<std::shared_ptr<LoadedModel>> loader; // a checkpoint of several GB takes a while
    bool loading = false;                                // until the loaded model is installed (or refused)
    std::shared_ptr<Job> inFlight;
    bool rerunPending = false;
    bool staleWhileHidden = false;
    bool engaged = false; // the tab has run once: scheme changes re-run it from then on
    bool runAfterLoad = true; // false while a session restores its model: nothing runs until asked
    std::optional<int> restoredLayer, restoredHead; // a session's choices, applied once its model is in
    std::optional<std::vector<model::SchemeEntry>> restoredSchemes; // a session's side-by-side list, likewise
    quint64 generation = 0;
};

AttentionPanel::AttentionPanel(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    auto* root = new QHBoxLayout(this);
    auto* mapPage = new QWidget;
    auto* images = new QVBoxLayout(mapPage);
    imageLabel_ = new QLabel;
    imageLabel_->setMinimumSize(240, 240);
    imageLabel_->setAlignment(Qt::AlignCenter);
    images->addWidget(imageLabel_, 2);
    // The colour scale of the map: attention is min-max normalised over the image, then gamma-shaped.
    colourBar_ = new QLabel;
    colourBar_->setObjectName("attentionScale");
    colourBar_->setAlignment(Qt::AlignCenter);
    colourBar_->setToolTip("Attention per image patch, min-max normalised over the image, then shaped by the contrast gamma");
    images->addWidget(colourBar_);
    imageShares_ = new QLabel;
    imageShares_->setObjectName("imageShares");
    imageShares_->setWordWrap(true);
    imageShares_->setAlignment(Qt::AlignCenter);
    imageShares_->hide();
    images->addWidget(imageShares_);
    // The comparison row: the model's own scheme, and where attention moved from it.
    comparison_ = new QWidget;
    auto* row = new QGridLayout(comparison_);
    ownLabel_ = new QLabel;
    differenceLabel_ = new QLabel;
    for (QLabel* l : {ownLabel_, differenceLabel_}) {
        l->setMinimumSize(120, 120);
        l->setAlignment(Qt::AlignCenter);
    }
    shiftLabel_ = new QLabel;
    shiftLabel_->setObjectName("shift");
    auto* differenceTitle = new QLabel("difference (red: more attention than own, blue: less)");
    differenceTitle->setWordWrap(true);
    differenceTitle->setAlignment(Qt::AlignHCenter);
    shiftLabel_->setWordWrap(true);
    row->addWidget(new QLabel("model's own scheme"), 0, 0, Qt::AlignHCenter);
    row->addWidget(differenceTitle, 0, 1);
    row->addWidget(ownLabel_, 1, 0);
    row->addWidget(differenceLabel_, 1, 1);
    row->addWidget(shiftLabel_, 2, 0, 1, 2, Qt::AlignHCenter);
    comparison_->hide();
    images->addWidget(comparison_, 1);
    views_ = new QTabWidget;
    views_->setObjectName("attentionViews");
    // Short names, so the four fit beside the side column at 1280x720; the tooltips say the rest.
    views_->addTab(mapPage, "Map");
    views_->setTabToolTip(0, "text -> image attention (or the own prior, relevancy) of the chosen token, layer and head");
    views_->addTab(layerHeadsPage(), "Layers \u00d7 heads");
    views_->setTabToolTip(1, "every captured layer and head at once; click one to open it");
    views_->addTab(schemesPage(), "Schemes");
    views_->setTabToolTip(2, "the same question under several schemes side by side");
    views_->addTab(regionPage(), "Region");
    views_->setTabToolTip(3, "which text tokens attend a region of the image (drag on the picture)");
    bias_ = new BiasView;
    bias_->setObjectName("biasView");
    views_->addTab(bias_, "Bias");
    views_->setTabToolTip(4, "the attention averaged over many samples, per scheme and layer (ropescope bias)");
    // Wide enough for every view's tab: the side column gives way (down to its minimum) before the tabs scroll.
    views_->setMinimumWidth(views_->tabBar()->sizeHint().width() + 2 * views_->style()->pixelMetric(QStyle::PM_DefaultFrameWidth) + 4);
    root->addWidget(views_, 1);

    auto* sidePanel = new QWidget;
    auto* side = new QVBoxLayout(sidePanel);
    auto* form = new QFormLayout;
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    modelLabel_ = new QLabel;
    modelLabel_->setObjectName("modelName");
    modelLabel_->setWordWrap(true);
    auto* openModel = new QPushButton("Model...");
    auto* openImage = new QPushButton("Image...");
    auto* addImageButton = new QPushButton("+ Image...");
    addImageButton->setObjectName("addImage");
    addImageButton->setToolTip(QString("Add a further image to the prompt (up to %1): one map per image, and each image's share of the "
                                       "attention").arg(model::kMaxPromptImages));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(openModel);
    buttons->addWidget(openImage);
    buttons->addWidget(addImageButton);
    form->addRow("Model", modelLabel_);
    form->addRow(buttons);
    errorNote_ = new QLabel;
    errorNote_->setObjectName("attentionError");
    errorNote_->setWordWrap(true);
    errorNote_->setStyleSheet("color: #b00020");
    errorNote_->hide();
    form->addRow(errorNote_);
    connect(this, &AttentionPanel::runFinished, errorNote_, [this](bool ok) {
        if (ok)
            errorNote_->hide();
    });
    question_ = new QLineEdit(io::sampleQuestion());
    question_->setObjectName("question");
    form->addRow("Question", question_);
    // Before a run: words the model cannot read, and what a task model was trained to answer.
    questionNote_ = new QLabel;
    questionNote_->setObjectName("questionNote");
    questionNote_->setWordWrap(true);
    questionNote_->setStyleSheet("color: #a04000;");
    questionNote_->hide();
    form->addRow(questionNote_);
    modelInputs_ = new QLabel(model::SyntheticTask::inputsNote());
    modelInputs_->setObjectName("modelInputs");
    modelInputs_->setWordWrap(true);
    modelInputs_->setStyleSheet("color: #555; font-size: 11px;");
    modelInputs_->hide();
    form->addRow(modelInputs_);
    connect(question_, &QLineEdit::textChanged, this, &AttentionPanel::updateQuestionNote);
    explorerScheme_ = new QCheckBox("explorer's scheme");
    explorerScheme_->setToolTip("Run the model under the scheme, parameters and AGE schedule set in the Parameters panel;\n"
                                "off: under the scheme the model was trained with");
    explorerScheme_->setObjectName("explorerScheme");
    form->addRow(explorerScheme_);
    compare_ = new QCheckBox("compare with own scheme");
    compare_->setToolTip("Also run the model under its own (trained) scheme: its map, the difference map and\n"
                         "the total-variation shift between the two maps at the shown layer");
    compare_->setObjectName("compare");
    compare_->setEnabled(false);
    form->addRow(compare_);
    auto* runButton = new QPushButton("Run");
    runButton->setObjectName("run");
    form->addRow(runButton);
    answerLabel_ = new QLabel;
    answerLabel_->setObjectName("answer");
    answerLabel_->setStyleSheet("font-weight: bold; font-size: 15px;");
    form->addRow("Answer", answerLabel_);
    // Each question and answer token has its own map: click one to show it, "all" for the mean.
    tokens_ = new QLabel;
    tokens_->setObjectName("mapTokens");
    tokens_->setWordWrap(true);
    tokens_->setTextFormat(Qt::RichText);
    tokens_->setToolTip("The map of one token: a question token's own attention, or for an answer token the attention of\n"
                        "the step that produced it. \"all\": the mean over the question tokens.");
    connect(tokens_, &QLabel::linkActivated, this, [this](const QString& link) { selectToken(link == "all" ? -1 : link.toInt()); });
    form->addRow("Map of", tokens_);
    layer_ = new QSlider(Qt::Horizontal);
    layer_->setObjectName("attentionLayer");
    layer_->setToolTip("The decoder layer whose text -> image attention is shown");
    auto* layerNumber = new QLabel("0");
    layerNumber->setObjectName("attentionLayerNumber");
    layerNumber->setMinimumWidth(24);
    connect(layer_, &QSlider::valueChanged, layerNumber, [layerNumber](int v) { layerNumber->setNum(v); });
    auto* layerRow = new QHBoxLayout;
    layerRow->addWidget(layer_, 1);
    layerRow->addWidget(layerNumber);
    form->addRow("Layer", layerRow);
    head_ = new QComboBox;
    head_->setObjectName("head");
    head_->setToolTip("mean or max over the heads, or one head");
    form->addRow("Head", head_);
    mapType_ = new QComboBox;
    mapType_->setObjectName("mapType");
    mapType_->addItems({"attention", "model's own positional prior", "gradient relevancy of the answer"});
    mapType_->setToolTip("The model's own positional prior: the head's score with q and k replaced by their means over the\n"
                         "prompt (content averaged away), rotated to each image token as the decoder rotates them. r is its\n"
                         "correlation with the head's attention: how much of the map position alone explains.\n"
                         "Gradient relevancy (Chefer et al. 2021): which image tokens the answer's first token depends on,\n"
                         "through every layer's attention weighted by its gradient (one backward pass; layer, head and token\n"
                         "do not apply).");
    form->addRow("Map type", mapType_);
    priorLabel_ = new QLabel;
    priorLabel_->setObjectName("priorFit");
    priorLabel_->setWordWrap(true);
    priorLabel_->setTextFormat(Qt::PlainText);
    form->addRow(priorLabel_);
    colormap_ = new QComboBox;
    colormap_->addItems({"jet", "viridis"});
    form->addRow("Colormap", colormap_);
    opacity_ = new QSlider(Qt::Horizontal);
    opacity_->setRange(0, 100);
    opacity_->setValue(55);
    form->addRow("Opacity", opacity_);
    gamma_ = new QDoubleSpinBox;
    gamma_->setRange(0.1, 5);
    gamma_->setValue(0.6);
    gamma_->setSingleStep(0.1);
    form->addRow("Contrast (gamma)", gamma_);
    smoothing_ = new QDoubleSpinBox;
    smoothing_->setRange(0, 5);
    smoothing_->setValue(1.0);
    smoothing_->setSingleStep(0.25);
    form->addRow("Smoothing (cells)", smoothing_);
    statusLabel_ = new QLabel;
    statusLabel_->setObjectName("attentionStatus");
    statusLabel_->setWordWrap(true);
    side->addLayout(form);
    side->addWidget(statusLabel_);
    side->addStretch(1);
    // The controls scroll in their own column, so the image keeps the width.
    auto* sideScroll = new QScrollArea;
    sideScroll->setWidget(sidePanel);
    sideScroll->setWidgetResizable(true);
    sideScroll->setFrameShape(QFrame::NoFrame);
    sideScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    sideScroll->setMinimumWidth(260);
    sideScroll->setMaximumWidth(360);
    root->addWidget(sideScroll);

    connect(runButton, &QPushButton::clicked, this, &AttentionPanel::requestRun);
    // Everything settings() holds: the window saves it with the session.
    connect(question_, &QLineEdit::editingFinished, this, &AttentionPanel::settingsChanged);
    for (QCheckBox* c : {explorerScheme_, compare_})
        connect(c, &QCheckBox::toggled, this, &AttentionPanel::settingsChanged);
    for (QSlider* s : {layer_, opacity_})
        connect(s, &QSlider::valueChanged, this, &AttentionPanel::settingsChanged);
    for (QComboBox* c : {head_, colormap_, mapType_})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::settingsChanged);
    for (QDoubleSpinBox* s : {gamma_, smoothing_})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &AttentionPanel::settingsChanged);
    connect(question_, &QLineEdit::returnPressed, this, &AttentionPanel::requestRun);
    connect(explorerScheme_, &QCheckBox::toggled, this, [this](bool on) {
        compare_->setEnabled(on); // the model's own scheme compared with itself shows nothing
        if (d->engaged)
            requestRun();
    });
    connect(compare_, &QCheckBox::toggled, this, [this] {
        if (d->engaged)
            requestRun();
    });
    connect(openModel, &QPushButton::clicked, this, [this] {
        const QString dir = chooseFolder(this, "Model folder");
        if (!dir.isEmpty())
            this->openModel(dir);
    });
    connect(&d->loader, &QFutureWatcher<std::shared_ptr<LoadedModel>>::finished, this, [this] {
        const std::shared_ptr<LoadedModel> loaded = d->loader.result();
        d->loading = false;
        d->rerunPending = false;
        if (!loaded->error.isEmpty()) {
            Q_EMIT runFinished(fail(loaded->error)); // the model in use stays
            return;
        }
        install(*loaded);
        if (d->runAfterLoad || d->engaged)
            requestRun();
        d->runAfterLoad = true;
    });
    connect(openImage, &QPushButton::clicked, this, [this] {
        const QString path = chooseOpenFile(this, "Image", "Images (*.png *.jpg *.jpeg *.bmp *.webp)");
        if (!path.isEmpty() && setImage(path))
            requestRun();
    });
    connect(addImageButton, &QPushButton::clicked, this, [this] {
        const QString path = chooseOpenFile(this, "Further image", "Images (*.png *.jpg *.jpeg *.bmp *.webp)");
        if (!path.isEmpty() && addImage(path))
            requestRun();
    });
    connect(&d->watcher, &QFutureWatcher<void>::finished, this, [this] {
        const std::shared_ptr<Job> job = std::move(d->inFlight);
        if (job && job->generation == d->generation)
            Q_EMIT runFinished(finish(*job));
        if (d->rerunPending) {
            d->rerunPending = false;
            requestRun();
        }
    });
    for (QSlider* s : {layer_, opacity_})
        connect(s, &QSlider::valueChanged, this, &AttentionPanel::repaintOverlay);
    for (QComboBox* c : {head_, colormap_, mapType_})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::repaintOverlay);
    connect(mapType_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int type) {
        if (type == 2 && d->run && !d->relevancy && d->engaged)
            requestRun(); // the backward pass runs on the worker, with the model
    });
    for (QDoubleSpinBox* s : {gamma_, smoothing_})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &AttentionPanel::repaintOverlay);

    if (QFile::exists(io::bundledModel() + "/config.json"))
        setModel(io::bundledModel());
    setImage(io::sampleImage());
}

AttentionPanel::~AttentionPanel()
{
    d->watcher.waitForFinished();
    d->loader.waitForFinished();
}

std::shared_ptr<AttentionPanel::LoadedModel> AttentionPanel::load(const QString& dir)
{
    auto m = std::make_shared<LoadedModel>();
    m->dir = dir;
    try {
        m->vlm = std::make_shared<model::Vlm>(dir);
        m->tokenizer = std::make_shared<const model::Tokenizer>(model::Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
        model::recordedScheme(dir); // a malformed "ropescope" record fails here, not at the first run
    } catch (const std::exception& e) {
        m->error = e.what();
    }
    return m;
}

void AttentionPanel::install(LoadedModel& m)
{
    d->vlm = std::move(m.vlm);
    d->tokenizer = std::move(m.tokenizer);
    d->modelDir = m.dir;
    bias_->setModel(m.dir);
    ++d->generation; // a run of the previous model that is still going is dropped
    d->run.reset();
    d->comparison.reset();
    d->token = -1;
    // The side-by-side list starts from the model's own scheme: the reference the others shift from.
    d->schemes.clear();
    schemeList_->clear();
    const model::ModelScheme own = model::recordedScheme(m.dir);
    const QString ownLabel = geometry::schemeName(own.params.kind) + (own.age.empty() ? QString() : " + AGE " + QString::fromStdString(own.age)) + " (own)";
    d->schemes.push_back({ownLabel, own});
    if (d->restoredSchemes) {
        d->schemes = std::move(*d->restoredSchemes);
        d->restoredSchemes.reset();
        schemeList_->clear();
    }
    for (const model::SchemeEntry& e : d->schemes)
        schemeList_->addItem(e.label);
    schemesView_->setPainter([](QPainter& p, const QRectF& r) {
        p.setPen(Qt::darkGray);
        p.drawText(r.adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap,
                   "Set a scheme in the Parameters panel and press \"Add explorer's scheme\" (up to 6), then Compare: each "
                   "scheme's map at the shown layer, its answer, PTD, prior spread and shift from the first.");
    });
    modelLabel_->setText(QFileInfo(m.dir).fileName() + " (trained with " + geometry::schemeName(model::recordedScheme(m.dir).params.kind) + ")");
    modelInputs_->setVisible(model::isTaskModel(m.dir));
    updateQuestionNote();
    layer_->setRange(0, d->vlm->config().text.layers - 1);
    layer_->setValue(d->restoredLayer.value_or(layer_->maximum()));
    head_->clear();
    head_->addItems({"mean", "max"});
    for (int h = 0; h < d->vlm->config().text.heads; ++h)
        head_->addItem(QString::number(h));
    if (d->restoredHead && *d->restoredHead < head_->count())
        head_->setCurrentIndex(*d->restoredHead);
    d->restoredLayer.reset();
    d->restoredHead.reset();
}

void AttentionPanel::updateQuestionNote()
{
    const QString note = d->tokenizer ? model::unknownWordsNote(d->tokenizer->unknownWords(question_->text())) : QString();
    questionNote_->setText(note);
    questionNote_->setVisible(!note.isEmpty());
}

QJsonObject AttentionPanel::settings() const
{
    return QJsonObject{{"model", d->modelDir},
                       {"image", d->imagePath},
                       {"more_images", QJsonArray::fromStringList(d->moreImagePaths)},
                       {"question", question_->text()},
                       {"explorer_scheme", explorerScheme_->isChecked()},
                       {"compare", compare_->isChecked()},
                       {"layer", layer_->value()},
                       {"head", head_->currentIndex()},
                       {"map_type", QStringList{"attention", "own_prior", "relevancy"}[mapType_->currentIndex()]},
                       {"colormap", colormap_->currentText()},
                       {"opacity", opacity_->value()},
                       {"gamma", gamma_->value()},
                       {"smoothing", smoothing_->value()},
                       {"region", d->region ? d->region->toString() : QString()},
                       {"schemes", schemesJson()}};
}

QJsonArray AttentionPanel::schemesJson() const
{
    QJsonArray list;
    for (const model::SchemeEntry& e : d->schemes)
        list.append(QJsonObject{{"label", e.label}, {"scheme", model::schemeToJson(e.scheme)}});
    return list;
}

void AttentionPanel::applySettings(const QJsonObject& s)
{
    // Each setting independently: a model folder or image that is gone leaves the current one.
    const QSignalBlocker block(this); // no settingsChanged echo while restoring
    if (s["question"].isString())
        question_->setText(s["question"].toString().left(4096));
    explorerScheme_->setChecked(s["explorer_scheme"].toBool(explorerScheme_->isChecked()));
    compare_->setChecked(s["compare"].toBool(compare_->isChecked()));
    if (s["colormap"].isString())
        colormap_->setCurrentText(s["colormap"].toString());
    mapType_->setCurrentIndex(std::max<int>(0, static_cast<int>(QStringList{"attention", "own_prior", "relevancy"}.indexOf(s["map_type"].toString()))));
    opacity_->setValue(s["opacity"].toInt(opacity_->value()));
    gamma_->setValue(s["gamma"].toDouble(gamma_->value()));
    smoothing_->setValue(s["smoothing"].toDouble(smoothing_->value()));
    std::optional<std::vector<model::SchemeEntry>> schemes;
    if (s["schemes"].isArray()) {
        schemes.emplace();
        for (const QJsonValue& v : s["schemes"].toArray()) {
            const QJsonObject entry = v.toObject();
            if (schemes->size() == static_cast<size_t>(model::kMaxComparedSchemes) || !entry["label"].isString() || !entry["scheme"].isObject())
                continue;
            try {
                schemes->push_back({entry["label"].toString().left(200), model::schemeFromJson(entry["scheme"].toObject())});
            } catch (const std::exception&) {
                // an entry the session cannot mean is dropped, the others kept
            }
        }
    }
    d->region.reset();
    d->regionOf.reset();
    if (!s["region"].toString().isEmpty()) {
        try {
            d->region = model::CellRegion::parse(s["region"].toString());
        } catch (const std::invalid_argument&) {
            // a region the session cannot mean is dropped, like a missing image
        }
    }
    const QString image = s["image"].toString();
    QStringList more;
    for (const QJsonValue& v : s["more_images"].toArray())
        if (v.isString() && QFileInfo(v.toString()).isFile() && more.size() + 1 < model::kMaxPromptImages)
            more << v.toString();
    if (!image.isEmpty() && (image != d->imagePath || more != d->moreImagePaths) && QFileInfo(image).isFile() && setImage(image))
        for (const QString& path : more)
            addImage(path); // one that no longer reads is dropped
    const QString dir = s["model"].toString();
    const int layer = s["layer"].toInt(-1), head = s["head"].toInt(-1);
    if (!dir.isEmpty() && QFileInfo(dir).absoluteFilePath() != QFileInfo(d->modelDir).absoluteFilePath()
        && QFileInfo(dir + "/config.json").isFile()) {
        if (layer >= 0)
            d->restoredLayer = layer;
        if (head >= 0)
            d->restoredHead = head;
        d->runAfterLoad = false;
        d->restoredSchemes = schemes;
        openModel(dir);
        return;
    }
    if (schemes && d->vlm) { // the model stays: its list is replaced now
        d->schemes = std::move(*schemes);
        schemeList_->clear();
        for (const model::SchemeEntry& e : d->schemes)
            schemeList_->addItem(e.label);
    } else if (schemes) {
        d->restoredSchemes = schemes; // the first model to load takes it
    }
    if (layer >= 0 && layer <= layer_->maximum())
        layer_->setValue(layer);
    if (head >= 0 && head < head_->count())
        head_->setCurrentIndex(head);
}

bool AttentionPanel::setModel(const QString& dir)
{
    d->loader.waitForFinished();
    const std::shared_ptr<LoadedModel> loaded = load(dir);
    if (!loaded->error.isEmpty())
        return fail(loaded->error);
    install(*loaded);
    return true;
}

void AttentionPanel::openModel(const QString& dir)
{
    if (d->loader.isRunning())
        d->loader.waitForFinished(); // rare: a second folder picked while the first still loads
    statusLabel_->setText("loading " + dir + " ...");
    d->loading = true;
    d->loader.setFuture(QtConcurrent::run([dir] { return load(dir); }));
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
    if (!further) {
        d->image = image;
        d->imagePath = path;
        d->moreImages.clear();
        d->moreImagePaths.clear();
    } else {
        d->moreImages.push_back(image);
        d->moreImagePaths << path;
    }
    ++d->generation;
    Q_EMIT settingsChanged();
    showImages();
    return true;
}

int AttentionPanel::imageCount() const
{
    return (d->image.isNull() ? 0 : 1) + static_cast<int>(d->moreImages.size());
}

void AttentionPanel::showImages()
{
    // Until a run draws the maps: the prompt's images side by side at one height, as the maps will be.
    std::vector<QImage> images;
    for (const QImage& image : d->moreImages)
        images.push_back(image.scaledToHeight(240, Qt::SmoothTransformation));
    images.insert(images.begin(), d->image.scaledToHeight(240, Qt::SmoothTransformation));
    imageLabel_->setPixmap(QPixmap::fromImage(views::pictureStrip(images)).scaled(imageLabel_->minimumSize(), Qt::KeepAspectRatio,
                                                                                   Qt::SmoothTransformation));
}

void AttentionPanel::setQuestion(const QString& q)
{
    question_->setText(q);
    Q_EMIT settingsChanged();
}

void AttentionPanel::setScheme(const session::ExplorerState& state)
{
    // Only the scheme and its AGE schedule reach the model: a new camera, colour or selection re-runs nothing.
    const bool schemeChanged = state.params != d->scheme.params || state.age != d->scheme.age;
    d->scheme = state;
    if (!schemeChanged || !d->engaged || !explorerScheme_->isChecked())
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
    explorerScheme_->setChecked(on);
}

void AttentionPanel::compareWithOwnScheme(bool on)
{
    compare_->setChecked(on);
}

double AttentionPanel::shift() const
{
    if (!d->run || !d->run->ownResult)
        return 0;
    const size_t layer = static_cast<size_t>(std::clamp(layer_->value(), 0, layers() - 1));
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

QString AttentionPanel::answer() const
{
    return d->answer;
}

QString AttentionPanel::status() const
{
    return d->status;
}

bool AttentionPanel::busy() const
{
    // Until a result is handled on this thread, not just computed.
    return d->inFlight != nullptr || d->loading;
}

bool AttentionPanel::fail(const QString& message)
{
    d->status = message;
    statusLabel_->setText(d->status);
    // The status line sits at the bottom of a scrolled column, out of sight at 1280x720: say it at the top too.
    errorNote_->setText(message);
    errorNote_->setToolTip(message);
    errorNote_->show();
    Q_EMIT errorShown(message);
    return false;
}

namespace {

bool regionFits(const model::CellRegion& region, const model::AttendRequest& prompt)
{
    try {
        region.tokensIn(prompt);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

} // namespace

std::shared_ptr<AttentionPanel::Job> AttentionPanel::prepare()
{
    if (!d->vlm)
        throw std::runtime_error("no model: open one (the bundled models live in resources/models)");
    if (d->image.isNull())
        throw std::runtime_error("no image");
    d->engaged = true;
    auto job = std::make_shared<Job>();
    job->vlm = d->vlm;
    job->tokenizer = d->tokenizer;
    job->modelDir = d->modelDir;
    job->generation = ++d->generation;
    model::AttentionQuery& q = job->query;
    q.image = d->image;
    q.moreImages = d->moreImages;
    q.question = question_->text();
    q.preprocess = model::loadPreprocessOptions(d->modelDir, d->vlm->config());
    const model::ModelScheme own = model::recordedScheme(d->modelDir);
    const bool explorer = explorerScheme_->isChecked();
    q.scheme = explorer ? model::ModelScheme{d->scheme.params, d->scheme.age} : own;
    q.answerMaps = true; // every answer token's map: the rows cost little next to the run
    q.meanQueryKey = true; // the own positional prior: one mean over the tokens per layer
    q.compareOwn = explorer && compare_->isChecked();
    job->relevancy = mapType_->currentIndex() == 2;
    job->schemeText = QString("scheme ") + geometry::schemeName(q.scheme.params.kind) + (q.scheme.age.empty() ? QString() : " + AGE " + QString::fromStdString(q.scheme.age));
    return job;
}

bool AttentionPanel::finish(const Job& job)
{
    if (!job.error.isEmpty())
        return fail(job.error);
    if (job.comparison) {
        d->comparison = job.comparison;
        repaintSchemes();
        const int done = static_cast<int>(job.comparison->rows.size());
        d->status = QString("compared %1 of %2 schemes at layer %3").arg(done).arg(job.schemes.size()).arg(job.comparedLayer);
        statusLabel_->setText(d->status);
        return done == static_cast<int>(job.schemes.size());
    }
    const model::AttentionRun& r = *job.run;
    d->run = job.run;
    d->runVlm = job.vlm;
    d->relevancy = job.relevancyOf;
    d->regionOf.reset(); // the region stays; its attention is the new run's
    if (d->region && !regionFits(*d->region, job.run->prompt))
        d->region.reset(); // another image size or fewer images: those cells are not there
    d->answer = r.answer;
    d->token = -1;
    d->status = job.schemeText + ", layout " + QString::fromStdString(r.result.layout.toString()) + ", allocation "
                + QString::fromStdString(r.result.layerTables.front().allocation.toString());
    if (!r.result.deepstackEmbeds.empty()) // Qwen3-VL: image features also enter the residual stream after these layers
        d->status += QString(", DeepStack after layers 0-%1").arg(r.result.deepstackEmbeds.size() - 1);
    if (!r.untrained.empty())
        d->status += "\nuntrained scheme (" + QString::fromStdString(r.untrained) + "): this model was trained with "
                     + geometry::schemeName(r.own.params.kind);
    answerLabel_->setText(d->answer.isEmpty() ? "(empty)" : d->answer);
    statusLabel_->setText(d->status);
    buildLayerHeads();
    repaintOverlay();
    return true;
}

bool AttentionPanel::run()
{
    d->watcher.waitForFinished(); // the model runs one request at a time; this run supersedes that one
    d->inFlight.reset();
    d->rerunPending = false;
    bool ok = false;
    try {
        const std::shared_ptr<Job> job = prepare();
        job->execute();
        ok = finish(*job);
    } catch (const std::exception& e) {
        ok = fail(e.what());
    }
    Q_EMIT runFinished(ok);
    return ok;
}

void AttentionPanel::requestRun()
{
    if (busy()) {
        d->rerunPending = true;
        return;
    }
    std::shared_ptr<Job> job;
    try {
        job = prepare();
    } catch (const std::exception& e) {
        Q_EMIT runFinished(fail(e.what()));
        return;
    }
    statusLabel_->setText(job->schemeText + ": running...");
    d->inFlight = job;
    d->watcher.setFuture(QtConcurrent::run([job] { job->execute(); }));
}

void AttentionPanel::showOwnPrior(bool on)
{
    mapType_->setCurrentIndex(on ? 1 : 0);
}

double AttentionPanel::priorCorrelation() const
{
    return d->priorCorrelation;
}

QStringList AttentionPanel::exportHeatmaps(const QString& path) const
{
    if (overlay_.isNull())
        throw std::runtime_error("no attention to export yet: run the model first");
    QJsonObject meta{{"model", QFileInfo(d->modelDir).absoluteFilePath()},
                     {"image", QFileInfo(d->imagePath).absoluteFilePath()},
                     {"question", question_->text()},
                     {"answer", d->answer},
                     {"run", d->status},
                     {"layer", layer_->value()},
                     {"head", head_->currentText()},
                     {"colormap", colormap_->currentText()},
                     {"opacity", opacity_->value() / 100.0},
                     {"gamma", gamma_->value()},
                     {"smoothing", smoothing_->value()}};
    if (d->run && d->run->ownResult)
        meta["shift"] = shift();
    if (mapType_->currentIndex() == 1) {
        meta["map"] = "own positional prior (mean q, k)";
        meta["prior_correlation"] = d->priorCorrelation;
    } else if (mapType_->currentIndex() == 2 && d->relevancy) {
        meta["map"] = "gradient relevancy of the answer's first token (Chefer et al. 2021)";
        meta["relevancy_text_share"] = d->relevancy->textShare;
    }
    if (d->token >= 0)
        meta["token"] = d->mapTokens()[static_cast<size_t>(d->token)].text;
    QStringList written;
    if (!QDir().mkpath(QFileInfo(path).path()))
        throw std::runtime_error(QFileInfo(path).path().toStdString() + ": cannot create the folder");
    auto write = [&](const QString& file, const QImage& image, const QString& figure) {
        QJsonObject m = meta;
        m["figure"] = figure;
        try {
            io::writeFileAtomically(file, views::encodePng(image, m));
        } catch (const io::IoError& e) {
            throw std::runtime_error(e.what());
        }
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

QString AttentionPanel::colourScaleHtml(const views::HeatmapOptions& options) const
{
    // The map's colormap drawn by the map's own code: a one-row grid from 0 to 1 over white.
    constexpr int kSteps = 64;
    std::vector<float> ramp(kSteps);
    for (int i = 0; i < kSteps; ++i)
        ramp[static_cast<size_t>(i)] = static_cast<float>(i) / (kSteps - 1);
    views::HeatmapOptions o = options;
    o.opacity = 1;
    o.smoothing = 0;
    o.gamma = 1;
    QImage white(160, 12, QImage::Format_RGB888);
    white.fill(Qt::white);
    const QImage bar = views::attentionOverlay(white, ramp, 1, kSteps, o);
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    bar.save(&buffer, "PNG");
    return QString("least <img src=\"data:image/png;base64,%1\"> most").arg(QString::fromLatin1(png.toBase64()));
}

QWidget* AttentionPanel::regionPage()
{
    auto* page = new QWidget;
    auto* box = new QVBoxLayout(page);
    regionView_ = new views::ChartView;
    regionView_->setObjectName("regionView");
    regionView_->setToolTip("Drag on the picture to select image cells: which question and answer tokens attend them, per layer\n"
                            "(share of each token's image attention on the region; the dashed line is the region's area)");
    box->addWidget(regionView_, 1);
    auto* row = new QHBoxLayout;
    auto* show3d = new QPushButton("Show in 3-D");
    show3d->setObjectName("showRegionIn3d");
    show3d->setToolTip("The prompt's layout under the run's scheme in the explorer: the strongest token selected, the three\n"
                       "strongest and the region's image tokens highlighted");
    auto* clear = new QPushButton("Clear region");
    row->addStretch(1);
    row->addWidget(clear);
    row->addWidget(show3d);
    box->addLayout(row);
    const auto cellAt = [this](QPointF at) -> std::optional<std::array<int, 3>> { // image, row, column
        if (!d->run)
            return std::nullopt;
        const views::PictureCell c = views::regionCellAt(QRectF(regionView_->rect()), mapPictures(d->run->prompt.images), at);
        if (c.picture < 0)
            return std::nullopt;
        const int cols = d->run->prompt.images[static_cast<size_t>(c.picture)].cols;
        return std::array<int, 3>{c.picture, c.cell / cols, c.cell % cols};
    };
    const auto select = [this, cellAt](QPointF from, QPointF to) {
        const auto a = cellAt(from), b = cellAt(to);
        if (a && b && (*a)[0] == (*b)[0]) // a region lies on one image
            selectRegion((*a)[1], (*a)[2], (*b)[1], (*b)[2], (*a)[0]);
    };
    connect(regionView_, &views::ChartView::clicked, this, [select](QPointF at) { select(at, at); });
    connect(regionView_, &views::ChartView::dragged, this, select);
    connect(regionView_, &views::ChartView::dragFinished, this, [this, select](QPointF from, QPointF to) {
        select(from, to);
        Q_EMIT settingsChanged();
    });
    connect(clear, &QPushButton::clicked, this, &AttentionPanel::clearRegion);
    connect(show3d, &QPushButton::clicked, this, &AttentionPanel::showRegionInExplorer);
    return page;
}

void AttentionPanel::selectRegion(int row0, int col0, int row1, int col1, int image)
{
    const model::CellRegion region{row0, col0, row1, col1, image};
    if (d->region && d->region->toString() == region.toString() && d->regionOf)
        return; // a drag repeats the same cell many times
    d->region = region;
    d->regionOf.reset();
    repaintRegion();
}

void AttentionPanel::clearRegion()
{
    d->region.reset();
    d->regionOf.reset();
    repaintRegion();
    Q_EMIT settingsChanged();
}

std::vector<double> AttentionPanel::regionShares() const
{
    if (!d->regionOf || !d->run)
        return {};
    return d->regionOf->share.at(static_cast<size_t>(std::clamp(layer_->value(), 0, layers() - 1)));
}

void AttentionPanel::repaintRegion()
{
    views::RegionChart& chart = *d->regionChart;
    chart = views::RegionChart{};
    QString hint = "Run the model, then drag on the picture to select image cells.";
    if (d->run) {
        const model::AttentionRun& run = *d->run;
        const model::AttendRequest& a = run.prompt;
        const size_t layer = static_cast<size_t>(std::clamp(layer_->value(), 0, layers() - 1));
        hint = "Drag on the picture to select image cells: which tokens attend them, per layer.";
        chart.title = "image region \u2192 text";
        const bool region = d->region && regionFits(*d->region, a);
        if (!region) { // the pictures as they are; with a region, outlineCells draws them
            std::vector<QImage> plain;
            for (const model::PromptImage& image : a.images)
                plain.push_back(image.resized);
            chart.image = views::pictureStrip(plain);
        } else {
            if (!d->regionOf || d->regionHead != head_->currentIndex()) {
                d->regionOf = model::regionAttention(run, d->region->tokensIn(a), headChoice());
                d->regionHead = head_->currentIndex();
            }
            const model::RegionAttention& r = *d->regionOf;
            chart.image = views::outlineCells(mapPictures(a.images), d->region->image,
                                              d->region->cells(a.images[static_cast<size_t>(d->region->image)].rows,
                                                               a.images[static_cast<size_t>(d->region->image)].cols));
            chart.title = QString("which tokens attend %1rows %2-%3, columns %4-%5")
                              .arg(a.images.size() > 1 ? QString("image %1, ").arg(d->region->image + 1) : QString())
                              .arg(std::min(d->region->row0, d->region->row1))
                              .arg(std::max(d->region->row0, d->region->row1))
                              .arg(std::min(d->region->col0, d->region->col1))
                              .arg(std::max(d->region->col0, d->region->col1));
            for (const model::MapToken& t : r.tokens) {
                chart.tokens << "'" + QString(t.text).replace('\n', "\\n") + "'";
                chart.answer.push_back(t.answer);
            }
            chart.layers = r.layers;
            chart.share = r.share;
            chart.shownLayer = static_cast<int>(layer);
            chart.area = r.area;
        }
    }
    regionView_->setPainter([shared = d->regionChart, hint](QPainter& p, const QRectF& r) { views::paintRegionChart(p, r, *shared, hint); });
}

void AttentionPanel::showRegionInExplorer()
{
    if (!d->run || !d->regionOf) {
        fail("select an image region first (drag on the picture in the Region tab)");
        return;
    }
    const model::AttentionRun& run = *d->run;
    const model::RegionAttention& r = *d->regionOf;
    const size_t layer = static_cast<size_t>(std::clamp(layer_->value(), 0, layers() - 1));
    session::ExplorerState s = d->scheme; // the explorer's view settings, with the run's prompt and scheme
    s.layout = run.result.layout.toString();
    s.params = run.scheme.params;
    s.age = run.scheme.age;
    s.ageLayers = d->vlm ? d->vlm->config().text.layers : s.ageLayers;
    s.layer = run.layers[layer];
    s.cameraState.reset();
    s.highlighted.clear();
    int marked = 0;
    for (int t : r.strongest(layer, static_cast<int>(r.tokens.size()))) {
        const model::MapToken& token = r.tokens[static_cast<size_t>(t)];
        if (token.answer) // answer tokens come after the prompt: not in its layout
            continue;
        if (marked == 0)
            s.selectedToken = static_cast<int>(token.index);
        s.highlighted.push_back(static_cast<int>(token.index));
        if (++marked == 3)
            break;
    }
    for (int c : r.cells)
        s.highlighted.push_back(static_cast<int>(run.prompt.imageTokens[static_cast<size_t>(c)]));
    Q_EMIT showInExplorer(s);
}

QWidget* AttentionPanel::layerHeadsPage()
{
    auto* page = new QWidget;
    auto* box = new QVBoxLayout(page);
    auto* row = new QHBoxLayout;
    layerHeadsShow_ = new QComboBox;
    layerHeadsShow_->addItems({"maps (each cell min-max on its own)", "image-attention mass"});
    row->addWidget(new QLabel("Show"));
    row->addWidget(layerHeadsShow_, 1);
    box->addLayout(row);
    layerHeadsView_ = new views::ChartView;
    layerHeadsView_->setObjectName("layerHeads");
    layerHeadsView_->setToolTip("Every layer (rows) x head (columns): click a cell to show that layer and head in the Map tab");
    box->addWidget(layerHeadsView_, 1);
    connect(layerHeadsShow_, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::repaintOverlay);
    connect(layerHeadsView_, &views::ChartView::clicked, this, [this](QPointF at) {
        const auto [gridRow, head] = views::layerHeadAt(QRectF(layerHeadsView_->rect()), *d->layerHeads, at);
        if (gridRow >= 0)
            openLayerHead(d->layerHeads->layers[static_cast<size_t>(gridRow)], head);
    });
    return page;
}

QWidget* AttentionPanel::schemesPage()
{
    auto* page = new QWidget;
    auto* box = new QVBoxLayout(page);
    auto* row = new QHBoxLayout;
    schemeList_ = new QListWidget;
    schemeList_->setObjectName("comparedSchemes");
    schemeList_->setMaximumHeight(90);
    schemeList_->setToolTip("Up to 6 schemes, run one after another on this image and question (the first is the reference of the shift)");
    auto* buttons = new QVBoxLayout;
    auto* add = new QPushButton("Add explorer's scheme");
    add->setToolTip("The scheme, parameters and AGE schedule set in the Parameters panel now");
    auto* remove = new QPushButton("Remove");
    auto* compare = new QPushButton("Compare");
    compare->setObjectName("compareSchemes");
    cancel_ = new QPushButton("Cancel");
    cancel_->setEnabled(false);
    for (QPushButton* b : {add, remove, compare, cancel_})
        buttons->addWidget(b);
    row->addWidget(schemeList_, 1);
    row->addLayout(buttons);
    box->addLayout(row);
    schemesView_ = new views::ChartView;
    schemesView_->setObjectName("schemesView");
    box->addWidget(schemesView_, 1);
    connect(add, &QPushButton::clicked, this, &AttentionPanel::addExplorerScheme);
    connect(remove, &QPushButton::clicked, this, [this] {
        const int at = schemeList_->currentRow();
        if (at >= 0 && at < static_cast<int>(d->schemes.size())) {
            d->schemes.erase(d->schemes.begin() + at);
            delete schemeList_->takeItem(at);
            Q_EMIT settingsChanged();
        }
    });
    connect(compare, &QPushButton::clicked, this, &AttentionPanel::requestCompare);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        if (d->inFlight)
            d->inFlight->cancelled = true;
    });
    return page;
}

void AttentionPanel::addExplorerScheme()
{
    if (d->schemes.size() >= static_cast<size_t>(model::kMaxComparedSchemes)) {
        fail(QString("at most %1 schemes side by side: remove one first").arg(model::kMaxComparedSchemes));
        return;
    }
    const geometry::SchemeParams& p = d->scheme.params;
    QString label = geometry::schemeName(p.kind);
    if (p.kind == geometry::SchemeKind::Circle)
        label += QString(" alpha %1").arg(p.circle.alpha);
    if (!d->scheme.age.empty())
        label += " + AGE " + QString::fromStdString(d->scheme.age);
    d->schemes.push_back({label, {p, d->scheme.age}});
    schemeList_->addItem(label);
    Q_EMIT settingsChanged();
}

int AttentionPanel::comparedSchemes() const
{
    return static_cast<int>(d->schemes.size());
}

std::vector<double> AttentionPanel::comparedShifts() const
{
    std::vector<double> shifts;
    if (d->comparison)
        for (const model::SchemeRow& r : d->comparison->rows)
            shifts.push_back(r.shift);
    return shifts;
}

void AttentionPanel::requestCompare()
{
    if (busy()) {
        fail("the model is busy: compare again when this run is done");
        return;
    }
    if (d->schemes.empty()) {
        fail("add schemes to compare first (\"Add explorer's scheme\" takes the one set in the Parameters panel)");
        return;
    }
    std::shared_ptr<Job> job;
    try {
        job = prepare();
    } catch (const std::exception& e) {
        fail(e.what());
        return;
    }
    job->schemes = d->schemes;
    job->comparedLayer = layer_->value();
    QPointer<QLabel> status = statusLabel_;
    job->progress = [status](int done, int total) { // from the worker: the label is updated on the UI thread
        QMetaObject::invokeMethod(status, [status, done, total] {
            if (status && done < total)
                status->setText(QString("comparing schemes: %1 of %2 ...").arg(done + 1).arg(total));
        }, Qt::QueuedConnection);
    };
    cancel_->setEnabled(true);
    d->inFlight = job;
    d->watcher.setFuture(QtConcurrent::run([job] { job->execute(); }));
}

void AttentionPanel::repaintSchemes()
{
    cancel_->setEnabled(false);
    if (!d->comparison)
        return;
    const model::SchemeComparison& c = *d->comparison;
    views::MapSheet sheet;
    sheet.title = QString("layer %1, mean over heads and question tokens (* untrained)").arg(c.layer);
    sheet.columns = std::min<int>(3, static_cast<int>(c.rows.size()));
    const views::HeatmapOptions o = heatmapOptions();
    for (const model::SchemeRow& r : c.rows)
        sheet.maps.push_back({views::attentionOverlay(mapPictures(c.images), r.map, o), r.caption()});
    schemesView_->setPainter([sheet](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, sheet); });
}

void AttentionPanel::openLayerHead(int layer, int head)
{
    layer_->setValue(layer);
    head_->setCurrentIndex(head + 2); // items: mean, max, then the heads
    views_->setCurrentIndex(0);
}

void AttentionPanel::buildLayerHeads()
{
    const model::AttentionRun& run = *d->run;
    views::LayerHeadGrid& g = *d->layerHeads;
    g = views::LayerHeadGrid{};
    g.title = "layers x heads, mean over question tokens";
    g.layers = run.layers;
    g.heads = static_cast<int>(run.attention().front().size(0));
    for (const model::PromptImage& image : run.prompt.images)
        g.grids.push_back(QSize(image.cols, image.rows));
    model::LayerHeadMaps maps = model::layerHeadMaps(run.attention(), run.prompt.grids());
    g.imageMass = maps.imageMass();
    g.maps = std::move(maps.maps);
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
    tokens_->setText(html);
}

model::HeadChoice AttentionPanel::headChoice() const
{
    const int head = head_->currentIndex(); // items: mean, max, then the heads
    return head <= 0 ? model::HeadChoice{} : head == 1 ? model::HeadChoice{model::HeadChoice::Kind::Max, 0}
                                                       : model::HeadChoice{model::HeadChoice::Kind::Index, head - 2};
}

views::HeatmapOptions AttentionPanel::heatmapOptions() const
{
    views::HeatmapOptions o;
    o.opacity = opacity_->value() / 100.0;
    o.gamma = gamma_->value();
    o.smoothing = smoothing_->value();
    o.colormap = colormap_->currentIndex() == 1 ? views::HeatmapOptions::Colormap::Viridis : views::HeatmapOptions::Colormap::Jet;
    return o;
}

void AttentionPanel::repaintOverlay()
{
    if (!d->run)
        return;
    const model::AttentionRun& run = *d->run;
    const model::AttendRequest& a = run.prompt;
    const size_t layer = static_cast<size_t>(std::clamp(layer_->value(), 0, layers() - 1));
    const model::HeadChoice choice = headChoice();
    const std::vector<model::MapToken> tokens = d->mapTokens();
    const bool oneToken = d->token >= 0 && d->token < static_cast<int>(tokens.size());
    const torch::Tensor rows = oneToken ? run.tokenAttention(layer, tokens[static_cast<size_t>(d->token)]) : run.attention()[layer];
    const std::vector<float> grid = model::headMap(rows, choice);
    const views::HeatmapOptions o = heatmapOptions();
    const views::MapPictures pictures = mapPictures(a.images);
    overlay_ = views::attentionOverlay(pictures, grid, o);
    priorLabel_->clear();
    imageShares_->setVisible(a.images.size() > 1);
    if (a.images.size() > 1) {
        QStringList shares;
        const std::vector<double> of = model::imageShares(rows, a.grids());
        for (size_t i = 0; i < of.size(); ++i)
            shares << QString("image %1: %2%").arg(i + 1).arg(100 * of[i], 0, 'f', 1);
        imageShares_->setText(QString("share of the image attention at layer %1 (mean over heads): %2").arg(layer).arg(shares.join(", ")));
    }
    if (mapType_->currentIndex() == 1 && d->runVlm) {
        // "all" has no single query: the prior is the row that predicts the answer (the question's last token).
        const model::MapToken token = oneToken ? tokens[static_cast<size_t>(d->token)] : run.questionTokens.back();
        const model::OwnPrior prior = model::ownPositionalPrior(*d->runVlm, run, run.layers[layer], choice, token);
        overlay_ = views::attentionOverlay(pictures, prior.prior, o);
        d->priorCorrelation = prior.correlation;
        priorLabel_->setText(QString("own positional prior of '%1' (mean q, k): r = %2 with its attention")
                                 .arg(token.text.trimmed())
                                 .arg(prior.correlation, 0, 'f', 3));
    } else if (mapType_->currentIndex() == 2) {
        if (d->relevancy) {
            overlay_ = views::attentionOverlay(pictures, d->relevancy->map, o);
            const std::vector<float> answerRow = model::headMap(run.tokenAttention(run.layers.size() - 1, run.questionTokens.back()), {});
            priorLabel_->setText(QString("relevancy of '%1' through all layers (attention x gradient; layer, head and token do not "
                                         "apply): %2% of it on text; r = %3 with the answer row's attention, last layer")
                                     .arg(d->tokenizer->decode({d->relevancy->target}).trimmed())
                                     .arg(100 * d->relevancy->textShare, 0, 'f', 1)
                                     .arg(model::pearson(d->relevancy->map, answerRow), 0, 'f', 3));
        } else {
            priorLabel_->setText("computing the relevancy ...");
        }
    }
    if (colourBarMap_ != static_cast<int>(o.colormap)) { // repaints follow every slider tick: draw the scale once per map
        colourBarMap_ = static_cast<int>(o.colormap);
        colourBar_->setText(colourScaleHtml(o));
    }
    imageLabel_->setPixmap(QPixmap::fromImage(overlay_).scaled(imageLabel_->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
    repaintTokens();
    repaintRegion();
    views::LayerHeadGrid& cells = *d->layerHeads;
    cells.selectedRow = static_cast<int>(layer);
    cells.selectedHead = choice.kind == model::HeadChoice::Kind::Index ? choice.index : -1;
    cells.show = layerHeadsShow_->currentIndex() == 1 ? views::LayerHeadGrid::Show::Mass : views::LayerHeadGrid::Show::Maps;
    layerHeadsView_->setPainter([shared = d->layerHeads](QPainter& p, const QRectF& r) { views::paintLayerHeadGrid(p, r, *shared); });
    const std::optional<int64_t> ownRow = d->ownRow();
    if (!run.ownResult || (oneToken && !ownRow)) { // the own scheme's run is a prefill: no answer tokens' rows
        ownOverlay_ = difference_ = QImage();
        comparison_->hide();
        return;
    }
    const torch::Tensor ownRows = run.ownResult->prefill.attentions[layer];
    const std::vector<float> own = model::headMap(ownRow ? ownRows.narrow(1, *ownRow, 1) : ownRows, choice);
    ownOverlay_ = views::attentionOverlay(pictures, own, o);
    difference_ = views::attentionDifferenceOverlay(pictures, own, grid, o);
    comparison_->show();
    for (auto [label, image] : {std::pair{ownLabel_, &ownOverlay_}, {differenceLabel_, &difference_}})
        label->setPixmap(QPixmap::fromImage(*image).scaled(label->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
    // The shift compares the mean maps whatever head the images show: say so.
    shiftLabel_->setText(QString("layer %1, mean over heads and %2: attention moved by %3 (total variation, "
                                 "0 = same places, 1 = disjoint)")
                             .arg(layer)
                             .arg(ownRow ? "'" + tokens[static_cast<size_t>(d->token)].text.trimmed() + "'" : QString("question tokens"))
                             .arg(shift(), 0, 'f', 3));
}

} // namespace ropescope::gui

#include "attention_panel.h"

#include "file_dialogs.h"
#include "charts/attention_heatmap.h"
#include "charts/chart_export.h"
#include "io/atomic_file.h"
#include "geometry/errors.h"
#include "io/resource_paths.h"
#include "model/attend_request.h"
#include "model/attention_stats.h"
#include "model/bundled_model.h"
#include "model/image_processor.h"
#include "model/tokenizer.h"
#include "model/vlm.h"

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
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <optional>
#include <stdexcept>

namespace ropescope::gui {

struct AttentionPanel::Job {
    // Built on the UI thread.
    std::shared_ptr<model::Vlm> vlm; // shared: a model replaced mid-run lives until its run ends
    model::ForwardRequest request;
    std::optional<model::ForwardRequest> ownRequest; // the model's own scheme, for the comparison
    quint64 generation = 0;
    int rows = 0, cols = 0;
    QImage resized;
    QString schemeText;
    QString untrainedNote; // empty when the model runs the scheme it was trained with
    // Filled by the worker.
    model::ForwardResult result;
    std::optional<model::ForwardResult> ownResult;
    QString error;

    void execute()
    {
        try {
            result = vlm->run(request);
            if (ownRequest)
                ownResult = vlm->run(*ownRequest); // vision is cached: a second decoder pass only
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
};

// A model folder loaded off the UI thread; installed only when everything in it loaded.
struct AttentionPanel::LoadedModel {
    QString dir;
    std::shared_ptr<model::Vlm> vlm;
    std::unique_ptr<model::Tokenizer> tokenizer;
    QString error;
};

struct AttentionPanel::Impl {
    QString modelDir;
    std::shared_ptr<model::Vlm> vlm;
    std::unique_ptr<model::Tokenizer> tokenizer;
    QImage image;
    QString imagePath;
    session::ExplorerState scheme;
    std::vector<torch::Tensor> attentions; // per layer [heads, question tokens, image tokens]
    std::vector<torch::Tensor> ownAttentions; // the same under the model's own scheme, when comparing
    int rows = 0, cols = 0;
    QImage resized;
    QString answer, status;
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
    quint64 generation = 0;
};

AttentionPanel::AttentionPanel(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    auto* root = new QHBoxLayout(this);
    auto* images = new QVBoxLayout;
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
    root->addLayout(images, 1);

    auto* sidePanel = new QWidget;
    auto* side = new QVBoxLayout(sidePanel);
    auto* form = new QFormLayout;
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    modelLabel_ = new QLabel;
    modelLabel_->setObjectName("modelName");
    modelLabel_->setWordWrap(true);
    auto* openModel = new QPushButton("Model...");
    auto* openImage = new QPushButton("Image...");
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(openModel);
    buttons->addWidget(openImage);
    form->addRow("Model", modelLabel_);
    form->addRow(buttons);
    question_ = new QLineEdit(io::sampleQuestion());
    question_->setObjectName("question");
    form->addRow("Question", question_);
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
    for (QComboBox* c : {head_, colormap_})
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
    for (QComboBox* c : {head_, colormap_})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &AttentionPanel::repaintOverlay);
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
        m->tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
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
    ++d->generation; // a run of the previous model that is still going is dropped
    d->attentions.clear();
    d->ownAttentions.clear();
    modelLabel_->setText(QFileInfo(m.dir).fileName() + " (trained with " + geometry::schemeName(model::recordedScheme(m.dir).params.kind) + ")");
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

QJsonObject AttentionPanel::settings() const
{
    return QJsonObject{{"model", d->modelDir},
                       {"image", d->imagePath},
                       {"question", question_->text()},
                       {"explorer_scheme", explorerScheme_->isChecked()},
                       {"compare", compare_->isChecked()},
                       {"layer", layer_->value()},
                       {"head", head_->currentIndex()},
                       {"colormap", colormap_->currentText()},
                       {"opacity", opacity_->value()},
                       {"gamma", gamma_->value()},
                       {"smoothing", smoothing_->value()}};
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
    opacity_->setValue(s["opacity"].toInt(opacity_->value()));
    gamma_->setValue(s["gamma"].toDouble(gamma_->value()));
    smoothing_->setValue(s["smoothing"].toDouble(smoothing_->value()));
    const QString image = s["image"].toString();
    if (!image.isEmpty() && image != d->imagePath && QFileInfo(image).isFile())
        setImage(image);
    const QString dir = s["model"].toString();
    const int layer = s["layer"].toInt(-1), head = s["head"].toInt(-1);
    if (!dir.isEmpty() && QFileInfo(dir).absoluteFilePath() != QFileInfo(d->modelDir).absoluteFilePath()
        && QFileInfo(dir + "/config.json").isFile()) {
        if (layer >= 0)
            d->restoredLayer = layer;
        if (head >= 0)
            d->restoredHead = head;
        d->runAfterLoad = false;
        openModel(dir);
        return;
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
    try {
        d->image = model::loadImage(path);
        d->imagePath = path;
        ++d->generation;
        Q_EMIT settingsChanged();
        imageLabel_->setPixmap(QPixmap::fromImage(d->image).scaled(imageLabel_->minimumSize(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
        return true;
    } catch (const model::ModelError& e) {
        return fail(e.what());
    }
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
    if (d->ownAttentions.empty())
        return 0;
    const size_t layer = static_cast<size_t>(std::clamp(layer_->value(), 0, static_cast<int>(d->attentions.size()) - 1));
    return model::attentionShift(d->ownAttentions[layer], d->attentions[layer]);
}

int AttentionPanel::layers() const
{
    return static_cast<int>(d->attentions.size());
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
    return false;
}

std::shared_ptr<AttentionPanel::Job> AttentionPanel::prepare()
{
    if (!d->vlm)
        throw std::runtime_error("no model: open one (the bundled models live in resources/models)");
    if (d->image.isNull())
        throw std::runtime_error("no image");
    d->engaged = true;
    auto job = std::make_shared<Job>();
    job->vlm = d->vlm;
    job->generation = ++d->generation;
    const model::ModelConfig& cfg = d->vlm->config();
    model::AttendRequest a = model::prepareAttend(*d->vlm, *d->tokenizer, d->image, question_->text(), model::loadPreprocessOptions(d->modelDir, cfg));
    const model::ModelScheme own = model::recordedScheme(d->modelDir);
    const bool explorer = explorerScheme_->isChecked();
    const geometry::SchemeParams params = explorer ? d->scheme.params : own.params;
    const std::string age = explorer ? d->scheme.age : own.age;
    a.forward.scheme = params;
    if (!age.empty())
        a.forward.age = geometry::parseAgeSchedule(age, cfg.text.layers);
    if (explorer && compare_->isChecked())
        job->ownRequest = model::underScheme(a.forward, own, cfg.text.layers);
    job->request = std::move(a.forward);
    job->rows = a.gridRows;
    job->cols = a.gridCols;
    job->resized = std::move(a.resized);
    const QString trained = geometry::schemeName(own.params.kind);
    const QString used = geometry::schemeName(params.kind);
    job->schemeText = "scheme " + used + (age.empty() ? QString() : " + AGE " + QString::fromStdString(age));
    const std::string difference = model::schemeDifference({params, age}, own, cfg.text.layers);
    if (!difference.empty())
        job->untrainedNote = "untrained scheme (" + QString::fromStdString(difference) + "): this model was trained with " + trained;
    return job;
}

bool AttentionPanel::finish(const Job& job)
{
    if (!job.error.isEmpty())
        return fail(job.error);
    const model::ForwardResult& r = job.result;
    const std::vector<int64_t> generated(r.generatedIds.data_ptr<int64_t>(), r.generatedIds.data_ptr<int64_t>() + r.generatedIds.numel());
    d->answer = model::answerText(*d->tokenizer, generated, job.vlm->config().eos);
    d->attentions = r.prefill.attentions;
    d->ownAttentions = job.ownResult ? job.ownResult->prefill.attentions : std::vector<torch::Tensor>{};
    d->rows = job.rows;
    d->cols = job.cols;
    d->resized = job.resized;
    d->status = job.schemeText + ", layout " + QString::fromStdString(r.layout.toString()) + ", allocation "
                + QString::fromStdString(r.layerTables.front().allocation.toString());
    if (!r.deepstackEmbeds.empty()) // Qwen3-VL: image features also enter the residual stream after these layers
        d->status += QString(", DeepStack after layers 0-%1").arg(r.deepstackEmbeds.size() - 1);
    if (!job.untrainedNote.isEmpty())
        d->status += "\n" + job.untrainedNote;
    answerLabel_->setText(d->answer.isEmpty() ? "(empty)" : d->answer);
    statusLabel_->setText(d->status);
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
    if (!d->ownAttentions.empty())
        meta["shift"] = shift();
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

void AttentionPanel::repaintOverlay()
{
    if (d->attentions.empty())
        return;
    const int layer = std::clamp(layer_->value(), 0, static_cast<int>(d->attentions.size()) - 1);
    const int head = head_->currentIndex(); // items: mean, max, then the heads
    const model::HeadChoice choice = head <= 0 ? model::HeadChoice{} : head == 1 ? model::HeadChoice{model::HeadChoice::Kind::Max, 0}
                                                                                 : model::HeadChoice{model::HeadChoice::Kind::Index, head - 2};
    const std::vector<float> grid = model::headMap(d->attentions[static_cast<size_t>(layer)], choice);
    views::HeatmapOptions o;
    o.opacity = opacity_->value() / 100.0;
    o.gamma = gamma_->value();
    o.smoothing = smoothing_->value();
    o.colormap = colormap_->currentIndex() == 1 ? views::HeatmapOptions::Colormap::Viridis : views::HeatmapOptions::Colormap::Jet;
    overlay_ = views::attentionOverlay(d->resized, grid, d->rows, d->cols, o);
    if (colourBarMap_ != static_cast<int>(o.colormap)) { // repaints follow every slider tick: draw the scale once per map
        colourBarMap_ = static_cast<int>(o.colormap);
        colourBar_->setText(colourScaleHtml(o));
    }
    imageLabel_->setPixmap(QPixmap::fromImage(overlay_).scaled(imageLabel_->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
    if (d->ownAttentions.empty()) {
        ownOverlay_ = difference_ = QImage();
        comparison_->hide();
        return;
    }
    const std::vector<float> own = model::headMap(d->ownAttentions[static_cast<size_t>(layer)], choice);
    ownOverlay_ = views::attentionOverlay(d->resized, own, d->rows, d->cols, o);
    difference_ = views::attentionDifferenceOverlay(d->resized, own, grid, d->rows, d->cols, o);
    comparison_->show();
    for (auto [label, image] : {std::pair{ownLabel_, &ownOverlay_}, {differenceLabel_, &difference_}})
        label->setPixmap(QPixmap::fromImage(*image).scaled(label->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation));
    // The shift compares the mean maps whatever head the images show: say so.
    shiftLabel_->setText(QString("layer %1, mean over heads and question tokens: attention moved by %2 (total variation, "
                                 "0 = same places, 1 = disjoint)")
                             .arg(layer)
                             .arg(shift(), 0, 'f', 3));
}

} // namespace ropescope::gui

// AttentionPanel's runs: a job prepared from the inputs, run on the worker or here, its result shown, and its
// failures said (the panel's widgets and inputs: attention_panel.cpp; the maps it draws: attention_panel_maps.cpp).
#include "app/gui/attention_panel.h"

#include "app/gui/attention/attention_controls.h"
#include "app/gui/attention/attention_job.h"
#include "app/gui/attention/attention_panel_state.h"
#include "app/gui/attention/attention_runner.h"
#include "app/gui/attention/experts_page.h"
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
#include "core/model/analysis/expert_usage.h"
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

#include <optional>
#include <stdexcept>
#include <utility>

namespace ropescope::gui {

namespace {

// Gemma: which layers are sliding (and their window) or full, and what the scheme's allocation covers on the kind of
// layer that rotates part of its head (Gemma 4's full layers: 64 pairs of a 512-wide head). Empty for other families.
QString layerKindsStatus(const model::ModelConfig& config, const model::AttentionRun& r)
{
    const std::string kinds = model::layerKindsNote(config.text);
    if (kinds.empty())
        return {};
    QString status = "\n" + QString::fromStdString(kinds);
    for (int layer = 0; layer < config.text.layers; ++layer) {
        if (config.text.isSliding(layer))
            continue;
        const geometry::PositionTable& table = r.result.layerTables[static_cast<size_t>(layer)];
        if (const std::string note = model::rotaryCoverageNote(table.rotary, table.allocation); !note.empty())
            status += "\nfull layers " + QString::fromStdString(note);
        break;
    }
    return status;
}

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
    ui_->answer->setText(wrappable(stale ? shown + " (previous question)" : shown));
    ui_->answer->setToolTip(stale ? "The answer to '" + d->answeredQuestion + "'; Run to ask the edited question" : QString());
}

void AttentionPanel::clearRun()
{
    // The answer, "Map of", the maps and the views all went with the run: a failed run after a successful one showed
    // the previous model's tokens and answer beside the error (issue 72 item 3).
    d->run.reset();
    d->runModel.reset();
    d->relevancy.reset();
    d->token = -1;
    d->runStatus.clear();
    overlay_ = ownOverlay_ = difference_ = QImage();
    ui_->tokens->clear();
    ui_->priorFit->clear();
    setStatus({});
    markStaleAnswer();
    map_->hideComparison();
    map_->showShares({});
    map_->showMask({});
    showImages();
    layerHeads_->setRun(nullptr);
    region_->setRun(nullptr);
    experts_->setUsage(model::ExpertUsage(), {});
    showExpertsView(false);
}

QString AttentionPanel::status() const
{
    return plainText(ui_->status->text());
}

void AttentionPanel::setStatus(const QString& text)
{
    ui_->status->setText(wrappable(text));
}

bool AttentionPanel::busy() const
{
    return runner_->busy();
}

bool AttentionPanel::fail(const QString& message)
{
    // The error has its own red line below Run (and the window's status bar): the status line goes back to the shown
    // run, from "loading ..." or "running ...", and never says another thing than what the maps show (issue 72 item 5).
    setStatus(d->runStatus);
    ui_->errorNote->setText(wrappable(message));
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
    d->runClock.start();
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
    if (!job.error.isEmpty()) {
        if (job.schemes.empty())
            clearRun(); // the maps of an earlier run would sit beside this run's error
        return fail(job.error);
    }
    const double took = seconds(d->runClock);
    if (job.comparison) {
        schemes_->showComparison(*job.comparison, heatmapOptions());
        const int done = static_cast<int>(job.comparison->rows.size());
        setStatus(QString("compared %1 of %2 schemes at layer %3 in %4")
                      .arg(done)
                      .arg(job.schemes.size())
                      .arg(job.comparedLayer)
                      .arg(durationText(took)));
        return done == static_cast<int>(job.schemes.size());
    }
    d->run = std::make_shared<const model::AttentionRun>(std::move(*job.run));
    d->runModel = job.model;
    d->relevancy = std::move(job.relevancyOf);
    const model::AttentionRun& r = *d->run;
    region_->setRun(d->run);
    d->token = -1;
    // What finished and how long it took first (and the load before it, once), then what the run was.
    QString status = "answered in " + durationText(took);
    if (!d->loaded.isEmpty())
        status = std::exchange(d->loaded, QString()) + ", " + status;
    status += "\n" + job.schemeText + ", layout " + QString::fromStdString(r.result.layout.toString()) + ", allocation " +
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
    status += layerKindsStatus(config, r);
    if (config.text.moe.any()) // the family and its mixture: "qwen3_5_moe, MoE: 256 experts, top-8 + a shared expert"
        status += "\n" + QString::fromStdString(config.modelType + ", " + model::moeNote(config.text));
    for (const std::string& note : {model::hybridNote(config.text), job.model->vlm->unusedNote()})
        if (!note.empty())
            status += "\n" + QString::fromStdString(note);
    if (!r.untrained.empty())
        status += "\nuntrained scheme (" + QString::fromStdString(r.untrained) + "): this model was trained with " +
            QString::fromStdString(geometry::schemeLabel(r.own.params));
    d->answeredQuestion = job.query.question;
    markStaleAnswer();
    d->runStatus = status;
    setStatus(status);
    layerHeads_->setRun(d->run);
    const bool moe = config.text.moe.any();
    experts_->setUsage(moe ? model::expertUsage(r, config) : model::ExpertUsage(),
                       QString::fromStdString(config.modelType + ", " + model::moeNote(config.text)));
    showExpertsView(moe);
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

void AttentionPanel::addExplorerScheme()
{
    const geometry::SchemeParams& p = d->scheme.params;
    QString label = model::schemeLabel({p, d->scheme.age});
    // Two Circle-RoPEs side by side differ in R (or k for an automatic radius) and alpha: both are named (issue 56
    // item 12: "circle alpha 0.3" twice for two radii).
    if (p.kind == geometry::SchemeKind::Circle && !p.custom)
        label.insert(static_cast<int>(geometry::schemeLabel(p).size()),
                     QString(" %1 %2 alpha %3")
                         .arg(p.circle.radiusMode == geometry::RadiusMode::Fixed ? "R" : "k")
                         .arg(p.circle.radius)
                         .arg(p.circle.alpha));
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

} // namespace ropescope::gui

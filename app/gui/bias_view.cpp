#include "app/gui/bias_view.h"

#include "app/reports/bias_report.h"
#include "app/gui/file_dialogs.h"
#include "core/cluster/sharded_run.h"
#include "core/model/analysis/bias_state.h"
#include "core/model/analysis/bias_samples.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/preprocess_config.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "views/widgets/chart_view.h"

#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QEvent>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>

namespace ropescope::gui {
namespace {

// "1 sample", "200 samples" (the summary said "1 samples": issue 72 item 9).
QString counted(long long n, const char* noun)
{
    return QString("%1 %2%3").arg(n).arg(noun).arg(n == 1 ? "" : "s");
}

// The smallest scale the figure is drawn at in the window, where it scrolls sideways too; above it the figure takes
// the view's whole width (fitFigure).
constexpr double kReadableScale = 0.35;

} // namespace

struct BiasView::Private {
    QString modelDir;
    std::shared_ptr<model::BiasAccumulation> result;
    QString error;
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    QFutureWatcher<std::shared_ptr<model::BiasAccumulation>> watcher;
    std::shared_ptr<QString> workerError = std::make_shared<QString>();
    QElapsedTimer clock; // since the measurement started
};

BiasView::BiasView(QWidget* parent) : QWidget(parent), d(std::make_unique<Private>())
{
    auto* root = new QVBoxLayout(this);
    addInputRows(root);
    addResultArea(root);
    connectControls();
}

// Where the samples come from, how many, the schemes, and the buttons.
void BiasView::addInputRows(QVBoxLayout* root)
{
    auto* from = new QHBoxLayout;
    source_ = new QComboBox;
    source_->setObjectName("biasSource");
    source_->addItems({"Bundled task", "Question set", "Image folder", "Video folder"});
    source_->setFocusPolicy(Qt::StrongFocus);
    source_->setToolTip("Where the samples come from, as `ropescope bias --samples / --questions / --images / --videos`");
    path_ = new QLineEdit;
    path_->setObjectName("biasPath");
    browse_ = new QPushButton("Browse...");
    browse_->setObjectName("biasBrowse");
    question_ = new QLineEdit;
    question_->setObjectName("biasQuestion");
    question_->setPlaceholderText("question asked of every image or video");
    // The source's own row (the path gets the room); then its count or question beside the schemes.
    from->addWidget(source_);
    from->addWidget(path_, 1);
    from->addWidget(browse_);
    root->addLayout(from);
    auto* controls = new QHBoxLayout;
    samples_ = new QSpinBox;
    samples_->setObjectName("biasSamples");
    samples_->setRange(1, 100000);
    samples_->setValue(200);
    samples_->setFocusPolicy(Qt::StrongFocus); // a wheel over it while scrolling must not change it
    samples_->setToolTip("Held-out samples of the bundled task (seed 1000003), as `ropescope bias --samples N`");
    schemes_ = new QLineEdit("vrope,circle");
    schemes_->setObjectName("biasSchemes");
    schemes_->setToolTip("Schemes besides the model's own, comma-separated (as `ropescope bias --schemes`)");
    run_ = new QPushButton("Measure");
    run_->setObjectName("biasRun");
    cancel_ = new QPushButton("Cancel");
    cancel_->setObjectName("biasCancel");
    cancel_->setEnabled(false);
    export_ = new QPushButton("Export...");
    export_->setObjectName("biasExport");
    export_->setEnabled(false);
    export_->setToolTip("bias.png/.svg/.pdf, bias.csv, bias.json and bias_state.json into a folder, as the CLI writes them");
    open_ = new QPushButton("Open result...");
    open_->setObjectName("biasOpen");
    open_->setToolTip("A folder written by `ropescope bias` (its bias_state.json), or a `bias --slurm` run: its merged result, or "
                      "where its shards stand");
    // Rows of their own, so the buttons keep their words beside the side column at 1280x720.
    samplesLabel_ = new QLabel("Samples");
    controls->addWidget(samplesLabel_);
    controls->addWidget(samples_);
    controls->addWidget(question_, 2);
    controls->addWidget(new QLabel("Schemes"));
    controls->addWidget(schemes_, 1);
    root->addLayout(controls);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
    buttons->addWidget(cancel_);
    buttons->addWidget(export_);
    buttons->addStretch(1);
    buttons->addWidget(open_);
    root->addLayout(buttons);
}

// The progress, the status line, the figure and the table of summaries.
void BiasView::addResultArea(QVBoxLayout* root)
{
    progress_ = new QProgressBar;
    progress_->setObjectName("biasProgress");
    progress_->setVisible(false);
    root->addWidget(progress_);
    status_ =
        new QLabel("Measure averages the model's text -> image attention over many samples, under its own scheme and the ones named.");
    status_->setObjectName("biasStatus");
    status_->setWordWrap(true);
    root->addWidget(status_);
    figure_ = new views::ChartView;
    figure_->setObjectName("biasFigure");
    // The figure scrolls at a readable size rather than shrinking to the dock (at 1280x720 its captions were
    // 5-pixel text); the splitter lets the table take the room back.
    auto* figureScroll = new QScrollArea;
    figureScroll->setWidget(figure_);
    figureScroll->setWidgetResizable(true);
    figureScroll->setFrameShape(QFrame::NoFrame);
    figureScroll->viewport()->installEventFilter(this); // the figure takes the view's width (fitFigure)
    auto* split = new QSplitter(Qt::Vertical);
    split->setChildrenCollapsible(false);
    split->addWidget(figureScroll);
    table_ = new QTableWidget(0, 7);
    table_->setObjectName("biasTable");
    table_->setHorizontalHeaderLabels(
        {"scheme", "layer", "PTD", "centre offset (rows, cols)", "last/first row", "last/first col", "r(distance)"});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    split->addWidget(table_);
    split->setStretchFactor(0, 2); // the table keeps room for a few schemes' rows (two rows at 1280x720 before)
    split->setStretchFactor(1, 1);
    root->addWidget(split, 1);
}

void BiasView::connectControls()
{
    connect(source_, &QComboBox::currentIndexChanged, this, &BiasView::updateSourceControls);
    connect(browse_, &QPushButton::clicked, this, [this] {
        const auto source = static_cast<Source>(source_->currentIndex());
        const QString chosen = source == Source::QuestionSet
            ? chooseOpenFile(this, "Question set", "Question sets (*.jsonl);;All files (*)")
            : chooseFolder(this,
                           source == Source::VideoFolder ? "A folder of videos (one sub-folder of frames each)" : "A folder of images");
        if (!chosen.isEmpty()) {
            path_->setText(chosen);
            path_->setToolTip(chosen);
        }
    });
    updateSourceControls();
    connect(run_, &QPushButton::clicked, this, &BiasView::start);
    connect(cancel_, &QPushButton::clicked, this, &BiasView::cancel);
    connect(export_, &QPushButton::clicked, this, [this] {
        const QString folder =
            chooseExportFolder(this, "Export the bias measurement into a folder (an existing one, or a new name)", "bias");
        if (folder.isEmpty())
            return;
        try {
            exportTo(folder);
            status_->setText("Exported to " + folder);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
    connect(open_, &QPushButton::clicked, this, [this] {
        const QString folder = chooseFolder(this, "A bias result: a folder with bias_state.json, or a bias --slurm run");
        if (!folder.isEmpty())
            openResult(folder);
    });
    connect(&d->watcher, &QFutureWatcher<std::shared_ptr<model::BiasAccumulation>>::finished, this, [this] {
        run_->setEnabled(true);
        cancel_->setEnabled(false);
        progress_->setVisible(false);
        const std::shared_ptr<model::BiasAccumulation> result = d->watcher.result();
        d->error = *d->workerError;
        if (result) {
            showResult(result);
            status_->setText(
                QString("Measured in %1 s: %2").arg(static_cast<double>(d->clock.elapsed()) / 1000.0, 0, 'f', 1).arg(status_->text()));
        } else {
            status_->setText(d->error);
        }
        Q_EMIT finished();
    });
}

BiasView::~BiasView()
{
    *d->cancelled = true;
    d->watcher.waitForFinished();
}

void BiasView::setModel(const QString& dir)
{
    if (dir == d->modelDir)
        return;
    d->modelDir = dir;
    d->result.reset();
    export_->setEnabled(false);
    clearFigure();
    table_->setRowCount(0);
}

void BiasView::setSamples(int samples)
{
    samples_->setValue(samples);
}

void BiasView::setSource(Source source, const QString& path, const QString& question)
{
    path_->setText(path);
    question_->setText(question);
    source_->setCurrentIndex(static_cast<int>(source));
    updateSourceControls();
}

void BiasView::updateSourceControls()
{
    const auto source = static_cast<Source>(source_->currentIndex());
    const bool synthetic = source == Source::BundledTask, folder = source == Source::ImageFolder || source == Source::VideoFolder;
    samples_->setVisible(synthetic);
    samplesLabel_->setVisible(synthetic);
    path_->setEnabled(!synthetic);
    path_->setToolTip(path_->text());
    browse_->setEnabled(!synthetic);
    // Short enough for the field at 1280x720 ("the bundled task's held-out samples" was cut: issue 72 item 9).
    path_->setPlaceholderText(synthetic ? "bundled task samples" : source == Source::QuestionSet ? "questions.jsonl" : "folder");
    question_->setVisible(folder);
}

void BiasView::setSchemes(const QString& schemes)
{
    schemes_->setText(schemes);
}

bool BiasView::busy() const
{
    return d->watcher.isRunning();
}

const model::BiasAccumulation* BiasView::result() const
{
    return d->result.get();
}

QString BiasView::error() const
{
    return d->error;
}

void BiasView::cancel()
{
    *d->cancelled = true;
    status_->setText("Cancelling...");
}

void BiasView::start()
{
    if (busy() || d->modelDir.isEmpty())
        return;
    // The schemes are read here, on the GUI thread: a bad name is said at once.
    std::vector<std::optional<model::ModelScheme>> schemes{std::nullopt};
    QStringList labels{"own"};
    for (const QString& name : schemes_->text().split(',', Qt::SkipEmptyParts)) {
        const auto kind = geometry::schemeFromName(name.trimmed().toStdString());
        if (!kind) {
            d->error =
                "Schemes: unknown scheme '" + name.trimmed() + "' (expected " + QString::fromStdString(geometry::schemeNameList()) + ")";
            status_->setText(d->error);
            Q_EMIT finished();
            return;
        }
        model::ModelScheme s;
        s.params.kind = *kind;
        schemes.push_back(s);
        labels << name.trimmed();
    }
    // The source too: a missing file or folder, or an empty question set, is said at once (images are read on the worker).
    model::BiasSampleSource source;
    const auto kind = static_cast<Source>(source_->currentIndex());
    try {
        if ((kind == Source::ImageFolder || kind == Source::VideoFolder) && question_->text().trimmed().isEmpty())
            throw std::runtime_error("write the question asked of every " + std::string(kind == Source::VideoFolder ? "video" : "image"));
        switch (kind) {
        case Source::BundledTask: source = model::syntheticSamples(samples_->value()); break;
        case Source::QuestionSet: source = model::questionSetSamples(path_->text()); break;
        case Source::ImageFolder: source = model::imageFolderSamples(path_->text(), question_->text().trimmed()); break;
        case Source::VideoFolder: source = model::videoFolderSamples(path_->text(), question_->text().trimmed()); break;
        }
    } catch (const std::exception& e) {
        d->error = QString("Samples: ") + e.what();
        status_->setText(d->error);
        Q_EMIT finished();
        return;
    }
    *d->cancelled = false;
    d->error.clear();
    *d->workerError = QString();
    run_->setEnabled(false);
    cancel_->setEnabled(true);
    const int64_t samples = source.total;
    progress_->setRange(0, static_cast<int>(samples));
    progress_->setValue(0);
    progress_->setVisible(true);
    status_->setText(
        QString("Measuring %1 under %2...")
            .arg(counted(static_cast<long long>(samples), "sample"), counted(static_cast<long long>(labels.size()), "scheme")));
    d->clock.start(); // the status says how long the measurement took (issue 56 item 9)
    const QString dir = d->modelDir;
    const QPointer<QProgressBar> bar = progress_;
    auto cancelled = d->cancelled;
    auto workerError = d->workerError;
    d->watcher.setFuture(QtConcurrent::run([=]() -> std::shared_ptr<model::BiasAccumulation> {
        try {
            // Its own copy of the model: the tab's runs go on with theirs meanwhile.
            const model::ModelBundle model = model::ModelBundle::load(dir);
            model::BiasRequest request;
            request.schemes = schemes;
            request.labels = labels;
            // The CLI's rule for the common grid (and a video's frame count).
            model::useSamples(request, source, model::commonShape(source, model.vlm->config(), model.preprocess));
            request.progress = [bar](int64_t done, int64_t) {
                QMetaObject::invokeMethod(bar, [bar, done] {
                    if (bar)
                        bar->setValue(static_cast<int>(done));
                });
            };
            request.cancelled = [cancelled] { return cancelled->load(); };
            auto a = std::make_shared<model::BiasAccumulation>(model::measureBias(model, request));
            a->source = source.description; // as the CLI records it, so the GUI's export merges with CLI shards
            a->total = samples;
            return a;
        } catch (const std::exception& e) {
            *workerError = cancelled->load() ? QString("Cancelled.") : QString("Bias: ") + e.what();
            return nullptr;
        }
    }));
}

void BiasView::clearFigure()
{
    figure_->setPainter({});
    figureSize_ = QSize();
    figure_->setMinimumSize(0, 0); // no figure: the scroll area's whole room, not the last one's readable size
}

bool BiasView::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Resize)
        fitFigure();
    return QWidget::eventFilter(watched, event);
}

// The whole figure across the view's width, scrolling only down: at a fixed size it was cut on the right at 1280x720
// (its title, 2 of 4 layers: issue 72 item 8). Below kReadableScale of its own size it scrolls sideways too.
void BiasView::fitFigure()
{
    if (figureSize_.isEmpty())
        return;
    const auto* scroll = qobject_cast<QScrollArea*>(figure_->parentWidget() ? figure_->parentWidget()->parentWidget() : nullptr);
    const int width =
        std::max(scroll ? scroll->viewport()->width() : figure_->width(), static_cast<int>(figureSize_.width() * kReadableScale));
    const int height = static_cast<int>(static_cast<long long>(width) * figureSize_.height() / figureSize_.width());
    if (figure_->minimumSize() != QSize(static_cast<int>(figureSize_.width() * kReadableScale), height))
        figure_->setMinimumSize(static_cast<int>(figureSize_.width() * kReadableScale), height);
}

void BiasView::showResult(std::shared_ptr<model::BiasAccumulation> result)
{
    d->result = std::move(result);
    const reports::BiasReport report = reports::biasReport(*d->result);
    const views::BiasFigure f = report.figureData;
    figure_->setPainter([f](QPainter& p, const QRectF& area) { views::paintBiasFigure(p, area, f); });
    figureSize_ = views::biasFigureSize(f);
    fitFigure();
    table_->setRowCount(0);
    const model::BiasAccumulation& a = *d->result;
    for (qsizetype s = 0; s < a.schemes.size(); ++s)
        for (size_t l = 0; l < a.layers.size(); ++l) {
            const model::BiasSummary sum = model::summarize(a.cell(static_cast<size_t>(s), l, model::BiasMap::Question), a.rows, a.cols);
            const model::BiasGeometry& g = a.geometry[static_cast<size_t>(s)];
            const int row = table_->rowCount();
            table_->insertRow(row);
            auto interval = [](const model::Estimate& e) {
                return QString("%1 [%2, %3]").arg(e.value, 0, 'f', 2).arg(e.low, 0, 'f', 2).arg(e.high, 0, 'f', 2);
            };
            const QStringList cells{a.schemes[s],
                                    QString::number(a.layers[l]),
                                    QString::number(l < g.ptd.size() ? g.ptd[l] : 0.0, 'f', 2),
                                    QString("%1, %2").arg(sum.rowOffset.value, 0, 'f', 2).arg(sum.colOffset.value, 0, 'f', 2),
                                    interval(sum.lastVsFirstRow),
                                    interval(sum.lastVsFirstCol),
                                    interval(sum.distanceCorrelation)};
            for (int c = 0; c < cells.size(); ++c) {
                auto* item = new QTableWidgetItem(cells[c]);
                item->setToolTip(cells[c]);
                table_->setItem(row, c, item);
            }
        }
    export_->setEnabled(true);
    status_->setText(QString("%1, %2, %3 (95% intervals)")
                         .arg(counted(a.sampleCount(), "sample"), counted(static_cast<long long>(a.schemes.size()), "scheme"),
                              counted(static_cast<long long>(a.layers.size()), "layer")));
}

void BiasView::openResult(const QString& folder)
{
    if (busy())
        return;
    d->error.clear();
    try {
        if (QFileInfo(QDir(folder).filePath("bias_state.json")).isFile()) {
            showResult(std::make_shared<model::BiasAccumulation>(model::readBiasState(folder)));
            status_->setText(status_->text() + " - opened from " + folder);
            return;
        }
        if (!cluster::isShardedRun(folder))
            throw std::runtime_error(folder.toStdString() + " holds no bias result (bias_state.json) and is not a bias --slurm run");
        const cluster::ShardedRun run = cluster::readRun(folder);
        if (run.kind != "bias")
            throw std::runtime_error(folder.toStdString() + " is a sharded " + run.kind.toStdString() + " run, not a bias measurement");
        // The window reads the shard folders only (no squeue): queued shards show as missing.
        const std::vector<cluster::ShardState> states = cluster::shardStates(
            folder, run.shards, [&](int i) { return model::folderHoldsShard(cluster::shardFolder(folder, i), i, run.shards); }, {});
        const auto count = [&](cluster::ShardState s) { return std::count(states.begin(), states.end(), s); };
        const auto done = count(cluster::ShardState::Done);
        if (done < run.shards) {
            d->result.reset();
            export_->setEnabled(false);
            clearFigure();
            table_->setRowCount(0);
            status_->setText(
                QString("%1: %2 of %3 shards done, %4 failed, %5 not run or still queued; the merged figure comes when all are "
                        "done (`ropescope bias --status` says more, `--resume` reruns the missing)")
                    .arg(folder)
                    .arg(done)
                    .arg(run.shards)
                    .arg(count(cluster::ShardState::Failed))
                    .arg(count(cluster::ShardState::Missing)));
            return;
        }
        // Every shard is done but the merge job has not written the result (yet): merge here, as it would.
        auto merged = std::make_shared<model::BiasAccumulation>(model::readBiasState(cluster::shardFolder(folder, 0)));
        for (int i = 1; i < run.shards; ++i)
            merged->merge(model::readBiasState(cluster::shardFolder(folder, i)));
        showResult(merged);
        status_->setText(status_->text() +
                         QString(" - merged here from the %1 shards of %2 (its merge job has not written it)").arg(run.shards).arg(folder));
    } catch (const std::exception& e) {
        d->error = QString("Open: ") + e.what();
        status_->setText(d->error);
    }
}

void BiasView::exportTo(const QString& folder) const
{
    if (!d->result)
        throw std::runtime_error("nothing measured yet");
    try {
        reports::writeBiasFiles(folder, *d->result);
    } catch (const std::exception& e) {
        throw std::runtime_error(e.what());
    }
}

} // namespace ropescope::gui

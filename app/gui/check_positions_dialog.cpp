#include "app/gui/check_positions_dialog.h"

#include "app/gui/file_dialogs.h"
#include "core/io/atomic_file.h"
#include "core/io/position_table_io.h"
#include "core/model/analysis/position_dump.h"
#include "views/charts/position_diff_chart.h"
#include "views/widgets/chart_view.h"

#include <QComboBox>
#include <QScreen>
#include <QDir>
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
#include <QSplitter>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>

namespace ropescope::gui {

namespace {
constexpr char kFromModel[] = "from a model folder";
// The table lists the first differing samples (a row per sample; the status counts them all).
constexpr int kListedSamples = 10000;
} // namespace

struct CheckPositionsDialog::Private {
    model::PositionRule rule;
    std::shared_ptr<model::DumpCheck> result;
    model::SampleCheck shown; // the selected sample, with its positions
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<QString> workerError = std::make_shared<QString>();
    QFutureWatcher<std::shared_ptr<model::DumpCheck>> watcher;
};

CheckPositionsDialog::CheckPositionsDialog(QWidget* parent) : QDialog(parent), d(std::make_unique<Private>())
{
    setWindowTitle("Check position ids");
    setObjectName("checkPositionsDialog");
    auto* root = new QVBoxLayout(this);
    auto* source = new QHBoxLayout;
    dump_ = new QLineEdit;
    dump_->setObjectName("checkDump");
    dump_->setPlaceholderText("a dump: .safetensors, .npz or .pt of one batch, or a folder of them");
    auto* file = new QPushButton("File...");
    auto* folder = new QPushButton("Folder...");
    source->addWidget(new QLabel("Dump"));
    source->addWidget(dump_, 1);
    source->addWidget(file);
    source->addWidget(folder);
    root->addLayout(source);
    auto* rule = new QHBoxLayout;
    family_ = new QComboBox;
    family_->setObjectName("checkFamily");
    family_->addItems(model::familyNames().split(", "));
    family_->addItem(kFromModel);
    family_->setCurrentText("qwen2.5-vl");
    family_->setFocusPolicy(Qt::StrongFocus);
    model_ = new QLineEdit;
    model_->setObjectName("checkModel");
    model_->setPlaceholderText("model folder (its config.json gives the family and the token ids)");
    auto* browseModel = new QPushButton("Browse...");
    browseModel->setObjectName("checkBrowseModel");
    check_ = new QPushButton("Check");
    check_->setObjectName("checkRun");
    check_->setDefault(true);
    cancel_ = new QPushButton("Cancel");
    cancel_->setEnabled(false);
    rule->addWidget(new QLabel("Rule"));
    rule->addWidget(family_);
    rule->addWidget(model_, 1);
    rule->addWidget(browseModel);
    rule->addWidget(check_);
    rule->addWidget(cancel_);
    root->addLayout(rule);
    progress_ = new QProgressBar;
    progress_->setVisible(false);
    root->addWidget(progress_);
    status_ = new QLabel(
        "Checks each sample's position ids against the family's rule, as `ropescope check-positions` (docs/CHECK_POSITIONS.md).");
    status_->setObjectName("checkStatus");
    status_->setWordWrap(true);
    root->addWidget(status_);
    addTableAndFigure(root);
    auto* buttons = new QHBoxLayout;
    open_ = new QPushButton("Open in the explorer");
    open_->setObjectName("checkOpen");
    open_->setEnabled(false);
    open_->setToolTip(
        "The selected sample's pipeline positions as a position table in the main window (compare them with the rule's scheme there)");
    auto* close = new QPushButton("Close");
    buttons->addStretch(1);
    buttons->addWidget(open_);
    buttons->addWidget(close);
    root->addLayout(buttons);
    // Large enough for the figure, never larger than the screen (at 1280x720 the buttons stay on it).
    const QRect screen = parent && parent->screen() ? parent->screen()->availableGeometry() : QRect(0, 0, 1280, 720);
    resize(std::min(1100, screen.width() * 9 / 10), std::min(760, screen.height() * 9 / 10));
    dump_->setFocus();

    const auto updateRule = [this] {
        const bool fromModel = family_->currentText() == kFromModel;
        model_->setEnabled(fromModel);
    };
    updateRule();
    connect(family_, &QComboBox::currentIndexChanged, this, updateRule);
    connect(file, &QPushButton::clicked, this, [this] {
        const QString f = chooseOpenFile(this, "A dump of one batch", "Dumps (*.safetensors *.npz *.pt *.pth);;All files (*)");
        if (!f.isEmpty())
            dump_->setText(f);
    });
    connect(folder, &QPushButton::clicked, this, [this] {
        const QString f = chooseFolder(this, "A folder of dumps, one batch each");
        if (!f.isEmpty())
            dump_->setText(f);
    });
    connect(browseModel, &QPushButton::clicked, this, [this] {
        const QString f = chooseFolder(this, "A model folder (config.json)");
        if (f.isEmpty())
            return;
        // A folder chosen is the rule wanted: the field was filled, greyed, and Check still used the family shown
        // ("another family's token ids?", issue 72 item 7).
        family_->setCurrentText(kFromModel);
        model_->setText(f);
    });
    connect(check_, &QPushButton::clicked, this, &CheckPositionsDialog::start);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        *d->cancelled = true;
        status_->setText("Cancelling...");
    });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) { selectSample(row); });
    connect(open_, &QPushButton::clicked, this, [this] {
        try {
            const QString tables = QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath("checked-positions");
            Q_EMIT openPositionTable(writeSelectedTable(tables));
            if (QWidget* window = parentWidget()) { // the explorer comes to the front, the dialog stays open behind it
                window->raise();
                window->activateWindow();
            }
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Open in the explorer", e.what());
        }
    });
    connect(&d->watcher, &QFutureWatcher<std::shared_ptr<model::DumpCheck>>::finished, this, &CheckPositionsDialog::showResult);
}

// The differing samples (a row each) above the selected one's figure.
void CheckPositionsDialog::addTableAndFigure(QVBoxLayout* root)
{
    auto* split = new QSplitter(Qt::Vertical);
    table_ = new QTableWidget(0, 9);
    table_->setObjectName("checkTable");
    table_->setHorizontalHeaderLabels({"batch", "row", "tokens", "kind", "first token", "segment", "axis", "got / expected", "what"});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    split->addWidget(table_);
    figure_ = new views::ChartView;
    figure_->setObjectName("checkFigure");
    split->addWidget(figure_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 2);
    root->addWidget(split, 1);
}

// The worker's check: each differing sample a row of the table, the counts in the status line.
void CheckPositionsDialog::showResult()
{
    check_->setEnabled(true);
    cancel_->setEnabled(false);
    progress_->setVisible(false);
    d->result = d->watcher.result();
    table_->setRowCount(0);
    figure_->setPainter({});
    open_->setEnabled(false);
    if (!d->result) {
        status_->setText(*d->workerError);
        Q_EMIT finished();
        return;
    }
    for (const model::SampleCheck& c : d->result->differing) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        const QStringList cells{QFileInfo(c.batch).fileName(),
                                QString::number(c.row),
                                QString::number(c.tokens),
                                model::faultKindName(c.kind),
                                c.firstToken >= 0 ? QString::number(c.firstToken) : QString(),
                                c.segment,
                                model::axisName(c),
                                QString("%1 / %2").arg(c.got).arg(c.expected),
                                c.detail};
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            item->setToolTip(col == 3 ? QString(model::faultKindWords(c.kind)) : cells[col]);
            table_->setItem(row, col, item);
        }
    }
    QStringList kinds;
    for (const auto& [k, n] : d->result->kinds)
        kinds << QString("%1 %2").arg(QString::fromStdString(k)).arg(n);
    status_->setText(QString("%1%2 samples in %3 batches against %4: %5")
                         .arg(d->result->cancelled ? "Cancelled after " : "")
                         .arg(d->result->samples)
                         .arg(d->result->batches)
                         .arg(d->rule.family)
                         .arg(d->result->differingTotal == 0
                                  ? QString("every sample matches the rule")
                                  : QString("%1 differ (%2)%3")
                                        .arg(d->result->differingTotal)
                                        .arg(kinds.join(", "))
                                        .arg(static_cast<int64_t>(d->result->differing.size()) < d->result->differingTotal
                                                 ? QString("; the first %1 are listed").arg(d->result->differing.size())
                                                 : QString())));
    if (!d->result->differing.empty())
        table_->setCurrentCell(0, 0);
    Q_EMIT finished();
}

CheckPositionsDialog::~CheckPositionsDialog()
{
    *d->cancelled = true;
    d->watcher.waitForFinished();
}

void CheckPositionsDialog::setDump(const QString& path)
{
    dump_->setText(path);
}

void CheckPositionsDialog::setRule(const QString& familyOrModelDir)
{
    if (model::ruleForFamily(familyOrModelDir)) {
        family_->setCurrentText(familyOrModelDir);
    } else {
        family_->setCurrentText(kFromModel);
        model_->setText(familyOrModelDir);
    }
}

bool CheckPositionsDialog::busy() const
{
    return d->watcher.isRunning();
}

int CheckPositionsDialog::differingCount() const
{
    return table_->rowCount();
}

QString CheckPositionsDialog::summary() const
{
    return status_->text();
}

void CheckPositionsDialog::start()
{
    if (busy())
        return;
    // The rule is read here: a bad model folder is said at once.
    try {
        if (dump_->text().trimmed().isEmpty())
            throw std::runtime_error("choose a dump (a file or a folder of batches)");
        if (family_->currentText() == kFromModel) {
            d->rule = model::ruleForModel(model_->text());
        } else {
            d->rule = *model::ruleForFamily(family_->currentText());
        }
    } catch (const std::exception& e) {
        status_->setText(QString("Check: ") + e.what());
        Q_EMIT finished();
        return;
    }
    *d->cancelled = false;
    check_->setEnabled(false);
    cancel_->setEnabled(true);
    progress_->setRange(0, 0);
    progress_->setVisible(true);
    status_->setText("Checking...");
    const QString dump = dump_->text().trimmed();
    const model::PositionRule rule = d->rule;
    const QPointer<QProgressBar> bar = progress_;
    auto cancelled = d->cancelled;
    auto workerError = d->workerError;
    d->watcher.setFuture(QtConcurrent::run([=]() -> std::shared_ptr<model::DumpCheck> {
        try {
            return std::make_shared<model::DumpCheck>(model::checkDump(
                dump, rule, 0, kListedSamples,
                [bar](const model::DumpProgress& p) {
                    QMetaObject::invokeMethod(bar, [bar, p] {
                        if (bar) {
                            bar->setRange(0, static_cast<int>(p.files));
                            bar->setValue(static_cast<int>(p.filesDone));
                            bar->setFormat(QString("%1 samples, %p%").arg(p.samples));
                        }
                    });
                },
                [cancelled] { return cancelled->load(); }));
        } catch (const std::exception& e) {
            // The rule's advice names the CLI's flag; the dialog's way is its family choice (issue 56 item 10).
            *workerError = QString("Check: ") + QString(e.what()).replace("--model DIR reads", "the family 'from a model folder' reads");
            return nullptr;
        }
    }));
}

void CheckPositionsDialog::selectSample(int row)
{
    open_->setEnabled(false);
    figure_->setPainter({});
    if (!d->result || row < 0 || row >= static_cast<int>(d->result->differing.size()))
        return;
    // The list keeps no positions (a dump can hold thousands of samples): the sample's batch is read again.
    const model::SampleCheck& listed = d->result->differing[static_cast<size_t>(row)];
    try {
        std::vector<model::SampleCheck> checks = model::checkBatch(model::readDumpBatch(listed.batch), d->rule, true);
        d->shown = std::move(checks.at(static_cast<size_t>(listed.row)));
    } catch (const std::exception& e) {
        status_->setText(QString("Check: ") + e.what());
        return;
    }
    views::PositionDiffChart chart;
    chart.title = QString("%1 row %2: %3 (%4)")
                      .arg(QFileInfo(listed.batch).fileName())
                      .arg(listed.row)
                      .arg(model::faultKindName(listed.kind), listed.detail);
    chart.tokens = d->shown.tokens;
    chart.got = d->shown.gotPositions;
    chart.expected = d->shown.expectedPositions;
    for (const QString& s : d->shown.segments)
        chart.segments << s;
    figure_->setPainter([chart](QPainter& p, const QRectF& area) { views::paintPositionDiffChart(p, area, chart); });
    open_->setEnabled(true);
}

QString CheckPositionsDialog::writeSelectedTable(const QString& folder) const
{
    if (d->shown.gotPositions.empty())
        throw std::runtime_error("select a differing sample first");
    const QString name = QString("%1_row%2.csv").arg(QFileInfo(d->shown.batch).completeBaseName()).arg(d->shown.row);
    if (!QDir().mkpath(folder))
        throw std::runtime_error(folder.toStdString() + ": cannot create the folder");
    try {
        io::writeFileInside(folder, name, io::positionTableCsv(model::pipelineTable(d->shown)));
    } catch (const io::IoError& e) {
        throw std::runtime_error(e.what());
    }
    return QDir(folder).filePath(name);
}

} // namespace ropescope::gui

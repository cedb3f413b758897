#include "app/gui/main_window.h"

#include "app/gui/settings_undo.h"
#include "app/gui/wheel_guard.h"

#include "app/gui/attention_panel.h"
#include "app/gui/file_dialogs.h"
#include "app/gui/message_bar.h"
#include "app/gui/readout_runner.h"
#include "app/gui/readout_words.h"
#include "app/gui/window_words.h"
#include "core/geometry/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/position_table_io.h"
#include "views/charts/chart_export.h"
#include "views/charts/readout_charts.h"
#include "views/models/position_table_model.h"
#include "views/render/offscreen_view.h"
#include "views/widgets/chart_view.h"
#include "views/widgets/parameter_panel.h"
#include "views/widgets/vtk_view_widget.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QDockWidget>
#include <QGuiApplication>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QRegularExpression>
#include <QResizeEvent>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

#include <cmath>
#include <cstring>
#include <utility>
#include <stdexcept>

namespace ropescope::gui {
using namespace views;

MainWindow::MainWindow(const QString& sessionDir, QWidget* parent) : QMainWindow(parent), autosave_(sessionDir)
{
    setWindowTitle("RopeScope");
    WheelGuard::installOnce();
    setStatusBar(new MessageBar); // a long message elided, whole in its tooltip
    buildUi();
    buildMenus();
    if (!restoreAutosave())
        writeAutosave();       // a new session is on disk at once; later edits are debounced
    recorded_ = sessionFile(); // undo starts here (a restore still computing records its state when it arrives)
    restoreShownTab();
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::saveShownTab);
}

MainWindow::~MainWindow()
{
    if (autosaveTimer_->isActive())
        writeAutosave(); // the last edit, still waiting for its pause
    scene_.reset();      // its actors belong to the view's renderer
}

QDockWidget* MainWindow::addScrollDock(const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area, int width)
{
    auto* scroll = new QScrollArea;
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    // Panels scroll up and down only: the dock is never narrower than its content plus the vertical scroll bar,
    // so no sliver of a horizontal scroll bar appears at 1280x720 (long labels wrap instead).
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(content->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(scroll);
    dock->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(area, dock);
    resizeDocks({dock}, {width}, Qt::Horizontal);
    return dock;
}

void MainWindow::fitToScreen()
{
    // Most of the screen (a 1920x1080 screen gets about 1800x1020, not a 1600x1000 island), with docks that
    // grow with the window; on a small screen all of it, and narrower docks.
    const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    fitTo(s ? s->availableGeometry() : QRect(0, 0, 1600, 1000));
}

void MainWindow::fitTo(const QRect& available)
{
    const bool small = available.width() < 1500;
    const QSize size = small ? available.size() : QSize(available.width() * 94 / 100, available.height() * 94 / 100);
    resize(size);
    if (!small)
        move(available.topLeft() + QPoint((available.width() - size.width()) / 2, (available.height() - size.height()) / 2));
    // Parameters, the Attention tab and Readouts side by side need about 1,240 px: on a narrower screen (1000x650)
    // the two docks share the left column as tabs, so the window fits the screen, and hiding or showing either
    // leaves its width as it was.
    if (minimumSizeHint().width() > available.width() && tabifiedDockWidgets(parametersDock_).isEmpty()) {
        tabifyDockWidget(parametersDock_, readoutsDock_);
        parametersDock_->raise();
    }
    const int parameters = small ? 330 : std::clamp(size.width() * 23 / 100, 400, 560);
    const int readouts = small ? 300 : std::clamp(size.width() * 25 / 100, 440, 640);
    resizeDocks({parametersDock_, readoutsDock_}, {parameters, readouts}, Qt::Horizontal);
}

void MainWindow::resizeEvent(QResizeEvent* event)
{
    QMainWindow::resizeEvent(event);
    // The layout has already given the whole change to the 3-D view: share it out again in proportion. An
    // invalid old size is the first show, which fitTo has sized.
    const int before = event->oldSize().width(), after = event->size().width();
    if (before <= 0 || after <= 0 || before == after)
        return;
    QList<QDockWidget*> docks;
    QList<int> widths;
    for (QDockWidget* dock : {parametersDock_, readoutsDock_})
        if (dock && dock->isVisible() && !dock->isFloating()) {
            docks << dock;
            widths << std::max(dock->minimumSizeHint().width(), static_cast<int>(static_cast<long long>(dock->width()) * after / before));
        }
    if (!docks.isEmpty())
        resizeDocks(docks, widths, Qt::Horizontal);
}

void MainWindow::buildUi()
{
    panel_ = new ParameterPanel;
    buildBusyIndicator();

    view_ = new VtkViewWidget;
    view_->setObjectName("scene");
    view_->setMinimumSize(400, 300);
    scene_ = std::make_unique<ConeScene>(view_->renderer());

    buildPositionTable();
    auto* centre = new QSplitter(Qt::Vertical);
    centre->addWidget(view_);
    centre->addWidget(tableView_);
    centre->setStretchFactor(0, 2);
    centre->setStretchFactor(1, 1);
    centre->setSizes({620, 300});

    QWidget* readouts = buildReadouts();
    buildAttentionPanel();
    tabs_ = new QTabWidget;
    tabs_->tabBar()->setObjectName("mainTabs"); // tests/gui_x11 clicks its tabs
    tabs_->addTab(centre, "Geometry");
    tabs_->addTab(attention_, "Attention");
    connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
        if (index == 0 && cameraStale_) { // the scene changed while the Attention tab was shown
            cameraStale_ = false;
            settleCamera();
            if (!state_.cameraState)
                scene_->applyCamera(state_.camera);
            view_->update();
        }
        if (index == 1 && !attentionRan_) {
            attentionRan_ = true; // the first visit runs the bundled model on the sample
            attention_->requestRun();
        }
    });

    // The side panels are docks: scrollable, closable from the View menu, movable and floatable, so the
    // window fits a laptop screen (1280x720) and the 3-D view can take the whole width.
    setCentralWidget(tabs_);
    parametersDock_ = addScrollDock("Parameters", "parametersDock", panel_, Qt::LeftDockWidgetArea, 400);
    readoutsDock_ = addScrollDock("Readouts", "readoutsDock", readouts, Qt::RightDockWidgetArea, 420);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    fitToScreen();

    // Dragging a slider changes the state many times a second: write the autosave once it pauses.
    autosaveTimer_ = new QTimer(this);
    autosaveTimer_->setSingleShot(true);
    autosaveTimer_->setInterval(500);
    connect(autosaveTimer_, &QTimer::timeout, this, &MainWindow::writeAutosave);

    cameraSaveTimer_ = new QTimer(this);
    cameraSaveTimer_->setSingleShot(true);
    cameraSaveTimer_->setInterval(400);
    connect(cameraSaveTimer_, &QTimer::timeout, this, [this] {
        captureCamera();
        autosave();
    });

    connectParameterPanel();
    connectSceneView();
}

// The readouts' worker and the status bar's "computing N tokens..." while it runs.
void MainWindow::buildBusyIndicator()
{
    runner_ = new ReadoutRunner(this);
    busyLabel_ = new QLabel;
    busyBar_ = new QProgressBar;
    busyBar_->setRange(0, 0); // busy, no percentage
    busyBar_->setMaximumWidth(120);
    statusBar()->addPermanentWidget(busyLabel_);
    statusBar()->addPermanentWidget(busyBar_);
    busyLabel_->hide();
    busyBar_->hide();
    connect(runner_, &ReadoutRunner::started, this, [this](long long tokens) {
        busyLabel_->setText(QString("computing %L1 tokens...").arg(tokens));
        busyLabel_->show();
        busyBar_->show();
    });
    connect(runner_, &ReadoutRunner::idle, this, [this] {
        busyLabel_->hide();
        busyBar_->hide();
    });
    connect(runner_, &ReadoutRunner::finished, this, [this](const ReadoutRunner::Result& r) { adopt(r); });
}

// The position table under the 3-D view: sortable, Ctrl+C copies rows, a double-click selects a text token.
void MainWindow::buildPositionTable()
{
    tableModel_ = new PositionTableModel(this);
    tableProxy_ = new QSortFilterProxyModel(this);
    tableProxy_->setSourceModel(tableModel_);
    tableProxy_->setSortRole(Qt::EditRole);
    tableView_ = new QTableView;
    tableView_->setObjectName("positionTable");
    tableView_->setModel(tableProxy_);
    tableView_->setSortingEnabled(true);
    tableView_->sortByColumn(0, Qt::AscendingOrder);
    tableView_->verticalHeader()->setVisible(false);
    tableView_->verticalHeader()->setDefaultSectionSize(20);
    // Columns as wide as their values and headers; the last takes the spare room, and the table scrolls sideways
    // where they cannot all fit (issue 56 item 8: stretched columns cut "-0.0004..." at 1280 px and "ndex" at 1000).
    tableView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tableView_->horizontalHeader()->setStretchLastSection(true);
    tableView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    auto* copy = new QAction("Copy", tableView_);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetShortcut);
    tableView_->addAction(copy);
    connect(copy, &QAction::triggered, this, [this] {
        // Selected rows as tab-separated text with full-precision positions.
        QModelIndexList rows = tableView_->selectionModel()->selectedRows();
        std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
        QStringList lines;
        QStringList header;
        for (int c = 0; c < tableProxy_->columnCount(); ++c)
            header << tableProxy_->headerData(c, Qt::Horizontal).toString();
        lines << header.join('\t');
        for (const QModelIndex& r : rows) {
            QStringList cells;
            for (int c = 0; c < tableProxy_->columnCount(); ++c)
                cells << tableProxy_->index(r.row(), c).data(Qt::EditRole).toString();
            lines << cells.join('\t');
        }
        QApplication::clipboard()->setText(lines.join('\n') + '\n');
    });
    connect(tableView_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const int token = tableProxy_->mapToSource(index).row();
        if (readouts_.table.isText(token))
            selectToken(token);
    });
}

// The Readouts dock's content: PTD, the selection, warnings and the four charts.
QWidget* MainWindow::buildReadouts()
{
    auto* readouts = new QWidget;
    auto* readoutLayout = new QVBoxLayout(readouts);
    readoutLayout->setContentsMargins(4, 4, 4, 4);
    ptdLabel_ = new QLabel;
    ptdLabel_->setObjectName("ptdReadout");
    ptdLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    selectionLabel_ = new QLabel;
    selectionLabel_->setObjectName("selectionReadout");
    selectionLabel_->setWordWrap(true);
    warningLabel_ = new QLabel;
    warningLabel_->setObjectName("warnings");
    warningLabel_->setWordWrap(true);
    warningLabel_->setStyleSheet("color: #a15c00;");
    ptdView_ = new ChartView;
    profileView_ = new ChartView;
    priorView_ = new ChartView;
    frequencyView_ = new ChartView;
    frequencyView_->setObjectName("frequencyChart");
    frequencyView_->setToolTip("Which axis drives each rotary frequency pair (highest frequency at the left), whether the pair "
                               "wraps, resolves or is constant across the visual grids, and the prior's decay along each axis");
    ptdLabel_->setWordWrap(true);
    for (QWidget* w : {static_cast<QWidget*>(ptdLabel_), static_cast<QWidget*>(selectionLabel_), static_cast<QWidget*>(warningLabel_)})
        readoutLayout->addWidget(w);
    for (ChartView* c : {ptdView_, profileView_, priorView_, frequencyView_}) {
        c->setMinimumHeight(170); // below that the panel scrolls instead of squashing the charts
        readoutLayout->addWidget(c, 1);
    }
    return readouts;
}

// The Attention tab, its settings autosaved and its errors and "Show in 3-D" said in the status bar.
void MainWindow::buildAttentionPanel()
{
    attention_ = new AttentionPanel;
    connect(attention_, &AttentionPanel::settingsChanged, this, &MainWindow::autosave);
    connect(attention_, &AttentionPanel::errorShown, this, [this](const QString& message) { statusBar()->showMessage(message, 15000); });
    connect(attention_, &AttentionPanel::showInExplorer, this, [this](const session::ExplorerState& state) {
        // One undoable step, and a word on what it replaced.
        const session::ExplorerState before = state_;
        nextEditName_ = "Show region in 3-D";
        if (applyState(state)) {
            tabs_->setCurrentIndex(0);
            statusBar()->showMessage(
                QString("Show in 3-D replaced the explorer's layout %1, scheme %2 (%3 tokens highlighted); Edit > Undo "
                        "(Ctrl+Z) brings them back, Edit > Clear highlights removes the marks")
                    .arg(QString::fromStdString(before.layout), QString::fromStdString(geometry::schemeLabel(before.params)))
                    .arg(state.highlighted.size()),
                15000);
        }
        nextEditName_.clear();
    });
}

// The Parameters panel's edits, scheme files and image requests.
void MainWindow::connectParameterPanel()
{
    // The panel's fields over the window's own (selection, camera, image); the panel already shows the
    // result, so it is not written back (that re-parsed the layout on every slider tick).
    connect(panel_, &ParameterPanel::stateEdited, this, [this] {
        settleCamera();
        session::ExplorerState s = state_;
        panel_->applyTo(s);
        request(s, false);
    });
    connect(panel_, &ParameterPanel::layoutRejected, this, [this](const QString& message) { showError(message, "layout"); });
    schemeFiles_ = new SchemeFiles(this);
    panel_->setRecentSchemeFiles(schemeFiles_->recent());
    connect(schemeFiles_, &SchemeFiles::recentChanged, panel_, &ParameterPanel::setRecentSchemeFiles);
    connect(panel_, &ParameterPanel::schemeFileRequested, this,
            [this](const QString& path, const QString& kind) { openSchemeFile(path, kind); });
    connect(panel_->customControls(), &views::CustomSchemeControls::importsFolderRequested, this,
            [this](const QString& file, bool imports) {
                if (!openSchemeFile(file, "python", imports, false))
                    panel_->customControls()->setScheme(state_.params.custom); // the box goes back to what runs
            });
    connect(schemeFiles_, &SchemeFiles::reloaded, this, &MainWindow::schemeFileReloaded);
    connect(schemeFiles_, &SchemeFiles::reloadFailed, this, [this](const QString& error, const QString& detail) {
        // The last valid positions stay on screen; the file's error is shown until it loads again (a slider
        // moved meanwhile runs the last good content, and must not clear it).
        schemeFileError_ = detail;
        panel_->customControls()->setFileError(detail);
        showError("scheme file: " + error);
    });
    connect(panel_, &ParameterPanel::loadImageRequested, this, [this] {
        const QString path = chooseOpenFile(this, "Image for patch colours", "Images (*.png *.jpg *.jpeg *.bmp *.webp)");
        if (!path.isEmpty())
            loadImage(path);
    });
}

// The 3-D view's picks, camera moves and resizes.
void MainWindow::connectSceneView()
{
    connect(view_, &VtkViewWidget::clicked, this, [this](double x, double y) {
        const int token = scene_->pickToken(x, y);
        if (token < 0)
            return;
        if (readouts_.table.isText(token)) {
            selectToken(token);
            // Said like a visual token's, so the status bar never keeps an earlier pick.
            statusBar()->showMessage(
                QString("token %1: text (segment %2)").arg(token).arg(readouts_.table.segment[static_cast<size_t>(token)]));
        } else {
            const auto i = static_cast<size_t>(token);
            const QString frame = readouts_.table.frame[i] > 0 ? QString(", frame %1").arg(readouts_.table.frame[i]) : QString();
            statusBar()->showMessage(QString("token %1: %2 (segment %3), row %4, col %5%6")
                                         .arg(token)
                                         .arg(geometry::modalityName(readouts_.table.modality[i]))
                                         .arg(readouts_.table.segment[i])
                                         .arg(readouts_.table.row[i])
                                         .arg(readouts_.table.col[i])
                                         .arg(frame));
        }
        showTokenInTable(token); // the table follows what is picked in the view
    });
    connect(view_, &VtkViewWidget::cameraChanged, cameraSaveTimer_, qOverload<>(&QTimer::start));
    // Until the user moves the camera it follows the preset, refitted to the view's real aspect ratio.
    connect(view_, &VtkViewWidget::resized, this, [this] {
        settleCamera(); // a resize right after the user turned the camera must not undo the turn
        if (!state_.cameraState)
            scene_->applyCamera(state_.camera);
    });
}

bool MainWindow::openSchemeFile(QString path, const QString& kind, bool importsFolder, bool offerFolder)
{
    if (path.isEmpty())
        path = kind == "positions" ? chooseOpenFile(this, "Open position table", "Position tables (*.csv *.json *.npy *.safetensors)")
                                   : chooseOpenFile(this, "Open Python scheme", "Python schemes (*.py)");
    if (path.isEmpty())
        return false;
    QString error, detail;
    std::optional<SchemeFiles::Loaded> loaded = schemeFiles_->open(path, &error, &detail, importsFolder);
    // A scheme that imports a module lying beside it: offer to let it import its folder (its hash then
    // covers those files), rather than leave the user to find the checkbox of a scheme that never opened.
    static const QRegularExpression missing("ModuleNotFoundError: No module named '([A-Za-z_][A-Za-z0-9_]*)'");
    if (const auto m = missing.match(error); !loaded && !importsFolder && offerFolder && m.hasMatch() &&
        QFileInfo(QFileInfo(path).absoluteDir().filePath(m.captured(1) + ".py")).isFile()) {
        const auto answer =
            QMessageBox::question(this, "Import the files beside it?",
                                  QString("%1 imports %2.py, which lies beside it. Let the scheme import the .py files in its "
                                          "folder? They run too, and trust covers them with the scheme.")
                                      .arg(QFileInfo(path).fileName(), m.captured(1)));
        if (answer == QMessageBox::Yes)
            loaded = schemeFiles_->open(path, &error, &detail, true);
    }
    if (!loaded) {
        panel_->customControls()->setFileError(detail);
        showError("scheme file: " + error);
        return false;
    }
    session::ExplorerState s = state_;
    if (loaded->layout)
        s.layout = loaded->layout->toString(); // a table's own layout
    s.params.custom = loaded->ref;
    nextEditName_ = "Open " + QFileInfo(path).fileName();
    schemeFileError_.clear(); // opened: it loads
    const bool applied = applyState(s);
    nextEditName_.clear();
    return applied;
}

void MainWindow::schemeFileReloaded(const geometry::CustomSchemeRef& ref)
{
    if (!state_.params.custom || state_.params.custom->file != ref.file)
        return;
    schemeFileError_.clear(); // it loads again
    panel_->customControls()->setFileError({});
    session::ExplorerState s = state_;
    geometry::CustomSchemeRef next = ref;
    for (const geometry::CustomParameter& p : ref.scheme->parameters()) // the values set, where the file still declares them
        if (const auto it = state_.params.custom->values.find(p.name); it != state_.params.custom->values.end())
            next.values[p.name] = std::clamp(it->second, p.min, p.max);
    s.params.custom = next;
    nextEditName_ = "Edit " + QString::fromStdString(next.scheme->label());
    if (applyState(s))
        statusBar()->showMessage("reloaded " + QString::fromStdString(next.scheme->label()), 4000);
    nextEditName_.clear();
}

void MainWindow::showError(const QString& message, const QString& parameter)
{
    lastError_ = message;
    panel_->setError(message, parameter);
    statusBar()->showMessage(message, 10000);
}

bool MainWindow::applyState(const session::ExplorerState& requested)
{
    return request(requested, true);
}

bool MainWindow::request(const session::ExplorerState& requested, bool showInPanel)
{
    origin_.requested();        // a request of the user's overtakes a restored state still computing
    showInPanel_ = showInPanel; // only the newest request's result is adopted (ReadoutRunner)
    std::optional<ReadoutRunner::Result> result = runner_->request(requested);
    return !result || adopt(std::move(*result)); // a large state arrives through ReadoutRunner::finished
}

bool MainWindow::readoutsBusy() const
{
    return runner_->busy();
}

bool MainWindow::adopt(ReadoutRunner::Result result)
{
    const bool restored = origin_.restoredArrived(); // the restored session, computed on the worker
    // A run's own error, else the watched file's standing one (its file on disk is still broken).
    if (!result.state.params.custom || !state_.params.custom || result.state.params.custom->file != state_.params.custom->file)
        schemeFileError_.clear();
    panel_->customControls()->setFileError(result.detail.isEmpty() ? schemeFileError_ : result.detail);
    if (!result.error.isEmpty()) {
        if (restored) { // keep the session the user made beside the defaults the window falls back to
            const QString problem = autosave_.setAside(result.error);
            applyState(session::ExplorerState{});
            showError(problem);
            return false;
        }
        showError(result.error, result.parameter);
        return false;
    }
    session::ExplorerState s = std::move(result.state);
    session::Readouts next = std::move(result.readouts);
    if (!showInPanel_) { // a panel edit: the camera is the window's, and may have moved while a large state computed
        settleCamera();
        s.cameraState = state_.cameraState;
    }
    // A new layout can put the scene far from where the user left the camera: refit it.
    if (s.layout != state_.layout)
        s.cameraState.reset();
    if (s.layout != state_.layout && s.highlighted == state_.highlighted)
        s.highlighted.clear(); // marks of another layout's tokens
    state_ = s;
    readouts_ = std::move(next);
    schemeFiles_->show(state_.params.custom);
    attention_->setScheme(state_);
    if (!lastError_.isEmpty() && statusBar()->currentMessage() == lastError_)
        statusBar()->clearMessage(); // the error is fixed: it does not linger in the status bar either
    lastError_.clear();
    panel_->setError({});
    if (showInPanel_)
        panel_->setState(state_);
    refresh();
    if (restored)
        recorded_ = sessionFile(); // the restored session is where undo starts
    if (origin_.adoptedIsTheUsers(restored))
        autosave();
    return true;
}

void MainWindow::refresh()
{
    updateScene();
    tableModel_->setTable(readouts_.table);
    updateCharts();
    updateReadoutLabels();
    panel_->setEffectiveRadius(effectiveRadius());
    if (const auto schedule = state_.ageSchedule())
        panel_->setLayerScheme(QString("layer %1 of %2: %3 (pattern %4)")
                                   .arg(state_.layer)
                                   .arg(schedule->layers())
                                   .arg(QString::fromStdString(readouts_.table.schemeLabel()))
                                   .arg(groupedPattern(schedule->pattern())));
    else
        panel_->setLayerScheme("no AGE schedule: every layer uses the scheme");
}

SceneOptions MainWindow::sceneOptions() const
{
    SceneOptions o;
    o.selectedToken = readouts_.selectedText;
    o.highlighted = state_.highlighted;
    o.colour = state_.colourMode;
    o.showConeLines = state_.showConeLines;
    o.showConeSurface = state_.showConeSurface;
    o.showLabels = state_.showLabels;
    o.darkBackground = state_.darkBackground;
    o.projection = state_.projection;
    if (o.colour == ColourMode::ImagePatch && !image_.isNull()) {
        // Each grid samples the image at its own resolution: the colour of the patch a token stands for.
        for (const geometry::VisualBlock& b : readouts_.table.blocks) {
            const QImage small =
                image_.scaled(b.cols, b.rows, Qt::IgnoreAspectRatio, Qt::SmoothTransformation).convertToFormat(QImage::Format_RGB888);
            for (int r = 0; r < b.rows; ++r)
                for (int c = 0; c < b.cols; ++c) {
                    const QRgb px = small.pixel(c, r);
                    o.patchColours.push_back(
                        {static_cast<std::uint8_t>(qRed(px)), static_cast<std::uint8_t>(qGreen(px)), static_cast<std::uint8_t>(qBlue(px))});
                }
        }
    }
    return o;
}

void MainWindow::updateScene()
{
    scene_->update(readouts_.table, sceneOptions());
    if (state_.cameraState) {
        scene_->setCameraState(*state_.cameraState);
    } else {
        scene_->applyCamera(state_.camera);
        cameraStale_ = !view_->isVisible(); // fitted to a hidden view's size: fit again when it is shown
    }
    view_->update();
}

void MainWindow::captureCamera()
{
    state_.cameraState = scene_->cameraState();
}

void MainWindow::settleCamera()
{
    if (cameraSaveTimer_->isActive())
        captureCamera();
}

void MainWindow::showTokenInTable(int token)
{
    const QModelIndex index = tableProxy_->mapFromSource(tableModel_->index(token, 0));
    if (!index.isValid())
        return;
    tableView_->selectRow(index.row());
    tableView_->scrollTo(index, QAbstractItemView::PositionAtCenter);
}

void MainWindow::showAttentionTab()
{
    tabs_->setCurrentIndex(1);
}

void MainWindow::selectToken(int token)
{
    session::ExplorerState s = state_;
    s.selectedToken = token;
    if (applyState(s))
        showTokenInTable(token);
}

void MainWindow::setCameraPreset(CameraPreset preset)
{
    session::ExplorerState s = state_;
    s.camera = preset;
    s.cameraState.reset();
    state_ = s;
    updateScene();
    autosave();
}

void MainWindow::loadImage(const QString& path)
{
    QImage image;
    if (!QFileInfo(path).isFile() || !image.load(path)) {
        showError(path + ": not a readable image file");
        return;
    }
    image_ = image;
    session::ExplorerState s = state_;
    s.imagePath = path;
    s.colourMode = ColourMode::ImagePatch;
    applyState(s);
}

} // namespace ropescope::gui

// MainWindow's menus, toolbar and export dialogs (the window itself: main_window.cpp).
#include "app/gui/attention_panel.h"
#include "app/gui/check_positions_dialog.h"
#include "app/gui/figure_export.h"
#include "app/gui/file_dialogs.h"
#include "app/gui/help_menu.h"
#include "app/gui/main_window.h"
#include "app/gui/readout_runner.h"
#include "app/gui/readout_words.h"
#include "app/gui/settings_undo.h"
#include "app/gui/wheel_guard.h"
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
#include <QScreen>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
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

void MainWindow::buildMenus()
{
    undo_ = new QUndoStack(this);
    buildFileMenu();

    // Every explorer and Attention setting goes on one undo stack (a slider drag is one step).
    QMenu* edit = menuBar()->addMenu("&Edit");
    QAction* undoAction = undo_->createUndoAction(this, "&Undo");
    undoAction->setShortcut(QKeySequence::Undo);
    undoAction->setObjectName("undo");
    QAction* redoAction = undo_->createRedoAction(this, "&Redo");
    // Ctrl+Shift+Z and the platform's Redo keys, each once: on Linux the platform's list already holds
    // Ctrl+Shift+Z, and one action holding a key twice makes Qt call it ambiguous and do nothing.
    QList<QKeySequence> redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
    if (!redoKeys.contains(QKeySequence("Ctrl+Shift+Z")))
        redoKeys.prepend(QKeySequence("Ctrl+Shift+Z"));
    redoAction->setShortcuts(redoKeys);
    redoAction->setObjectName("redo");
    edit->addAction(undoAction);
    edit->addAction(redoAction);
    // The shortcuts list names them by this, not by their changing text ("Undo Change layout").
    undoAction->setProperty("shortcutName", "Undo");
    redoAction->setProperty("shortcutName", "Redo");
    // An undo or redo says what it did in the status bar, which must not keep a message about the step undone
    // ("Show in 3-D replaced...", issue 56 item 11). The stack has already moved when these run.
    connect(undoAction, &QAction::triggered, this, [this] { statusBar()->showMessage("Undone: " + undo_->redoText(), 6000); });
    connect(redoAction, &QAction::triggered, this, [this] { statusBar()->showMessage("Redone: " + undo_->undoText(), 6000); });
    edit->addSeparator();
    edit->addAction("Clear &highlights", this, [this] {
        session::ExplorerState s = state_;
        s.highlighted.clear();
        applyState(s);
    });
    edit->addAction("Reset to &defaults", this, [this] {
        session::ExplorerState s;
        s.cameraState.reset();
        nextEditName_ = "Reset to defaults";
        applyState(s);
        nextEditName_.clear();
    });
    QMenu* viewMenu = menuBar()->addMenu("&View");
    QToolBar* toolbar = addToolBar("Camera");
    toolbar->setObjectName("cameraToolbar");
    const std::pair<const char*, CameraPreset> presets[] = {
        {"Isometric", CameraPreset::Isometric}, {"Down text axis", CameraPreset::DownTextAxis}, {"Side", CameraPreset::Side}};
    int key = 1;
    for (const auto& [name, preset] : presets) {
        QAction* a =
            viewMenu->addAction(name, QKeySequence(QString("Ctrl+%1").arg(key++)), this, [this, p = preset] { setCameraPreset(p); });
        toolbar->addAction(a);
    }
    viewMenu->addSeparator();
    QAction* showParameters = parametersDock_->toggleViewAction();
    showParameters->setShortcut(QKeySequence("Ctrl+Shift+P"));
    QAction* showReadouts = readoutsDock_->toggleViewAction();
    showReadouts->setShortcut(QKeySequence("Ctrl+Shift+R"));
    viewMenu->addAction(showParameters);
    viewMenu->addAction(showReadouts);
    // A dock shown while it shares a column with the other as a tab (a narrow screen) comes to the front.
    for (QDockWidget* dock : {parametersDock_, readoutsDock_})
        connect(dock->toggleViewAction(), &QAction::triggered, dock, [dock](bool shown) {
            if (shown)
                dock->raise();
        });
    addHelpMenu(this);
}

// File: sessions, scheme files, Check position ids, and every export.
void MainWindow::buildFileMenu()
{
    QMenu* file = menuBar()->addMenu("&File");
    file->addAction("&Open session...", QKeySequence::Open, this, [this] {
        const QString path = chooseOpenFile(this, "Open session", "RopeScope sessions (*.ropescope.json *.json)");
        if (!path.isEmpty() && !openSession(path))
            QMessageBox::warning(this, "Open session", lastError_);
    });
    file->addAction("Open &Python scheme...", this, [this] { openSchemeFile({}, "python"); });
    file->addAction("Open position &table...", this, [this] { openSchemeFile({}, "positions"); });
    file->addAction("&Check position ids...", this, [this] {
        // One dialog, kept: its last dump and result are there when it is opened again.
        auto* dialog = findChild<CheckPositionsDialog*>("checkPositionsDialog");
        if (!dialog) {
            dialog = new CheckPositionsDialog(this);
            connect(dialog, &CheckPositionsDialog::openPositionTable, this, [this](const QString& path) {
                // The table is shown in the Geometry tab: go there, from the Attention tab's views too (issue 56 item 6).
                if (openSchemeFile(path, "positions"))
                    tabs_->setCurrentIndex(0);
            });
        }
        dialog->show();
        dialog->raise();
    });
    file->addAction("&Save session as...", QKeySequence::Save, this, [this] {
        QString path = chooseSaveFile(this, "Save session", "session.ropescope.json", "RopeScope sessions (*.ropescope.json)");
        if (path.isEmpty())
            return;
        try {
            saveSession(path);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Save session", e.what());
        }
    });
    file->addSeparator();
    file->addAction("Export 3-D view as &PNG...", QKeySequence("Ctrl+E"), this, [this] {
        const QString path = chooseSaveFile(this, "Export 3-D view", "cone.png", "PNG (*.png)");
        if (path.isEmpty())
            return;
        bool ok = false;
        const QString res = QInputDialog::getText(this, "Resolution", "Width x height in pixels:", QLineEdit::Normal, "2400x1800", &ok);
        static const QRegularExpression re("^(\\d+)x(\\d+)$");
        const auto m = re.match(res.trimmed());
        if (!ok || !m.hasMatch())
            return;
        try {
            exportView(path, QSize(std::clamp(m.captured(1).toInt(), 16, 8192), std::clamp(m.captured(2).toInt(), 16, 8192)));
            confirmExport(this, path);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
    file->addAction("Export PTD chart...", this, [this] { exportWithDialog(ChartKind::Ptd); });
    file->addAction("Export distance profile...", this, [this] { exportWithDialog(ChartKind::Profile); });
    file->addAction("Export prior heatmap...", this, [this] { exportWithDialog(ChartKind::Prior); });
    file->addAction("Export frequency chart...", this, [this] { exportWithDialog(ChartKind::Frequencies); });
    file->addAction("Export &attention heatmap...", this, [this] {
        const QString path = chooseSaveFile(this, "Export attention heatmap", "attention.png", "PNG (*.png)");
        if (path.isEmpty())
            return;
        try {
            attention_->exportHeatmaps(path);
            confirmExport(this, path);
        } catch (const std::runtime_error& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
    file->addAction("Export position &table...", this, [this] {
        const QString path = chooseSaveFile(this, "Export position table", "positions.csv", "CSV (*.csv);;JSON (*.json)");
        if (path.isEmpty())
            return;
        try {
            exportTable(path);
            confirmExport(this, path);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, "Export", e.what());
        }
    });
    file->addSeparator();
    file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::exportWithDialog(ChartKind kind)
{
    const char* names[] = {"ptd", "profile", "prior", "frequencies"};
    const QString path =
        chooseSaveFile(this, "Export chart", QString("%1.svg").arg(names[static_cast<int>(kind)]), "SVG (*.svg);;PDF (*.pdf);;PNG (*.png)");
    if (path.isEmpty())
        return;
    try {
        exportChart(kind, path, QSize(1200, 750));
        confirmExport(this, path);
    } catch (const std::exception& e) {
        QMessageBox::warning(this, "Export", e.what());
    }
}

} // namespace ropescope::gui

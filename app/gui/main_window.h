#pragma once
#include "app/gui/edit_origin.h"
#include "app/gui/readout_runner.h"
#include "app/gui/scheme_files.h"
#include "core/session/explorer_state.h"
#include "core/session/readouts.h"
#include "core/session/session_file.h"
#include "views/charts/chart_export.h"
#include "views/scene/cone_scene.h"

#include <QImage>
#include <QMainWindow>

#include <memory>

class QDockWidget;
class QLabel;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;
class QTimer;
class QUndoStack;

namespace ropescope::views {
class ChartView;
class ParameterPanel;
class PositionTableModel;
class VtkViewWidget;
} // namespace ropescope::views

namespace ropescope::gui {

class AttentionPanel;

enum class ChartKind { Ptd, Profile, Prior, Frequencies };

// The explorer window: parameters | 3-D cone view over the position table | readouts (PTD of every
// scheme, distance profile, positional-prior heatmap). Every change re-renders live and is autosaved
// to `sessionDir`, from which the next launch restores it.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const QString& sessionDir, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The state shown; applyState recomputes everything (invalid states keep the last good view and
    // report the error).
    const session::ExplorerState& state() const { return state_; }
    // Large layouts (see ReadoutRunner) are computed on a worker: applyState returns at once and the
    // window shows the new state when it is ready; readoutsBusy() says whether one is under way.
    bool applyState(const session::ExplorerState& state);
    bool readoutsBusy() const;
    const session::Readouts& readouts() const { return readouts_; }
    QString lastError() const { return lastError_; }
    QString ptdReadout() const;
    QString selectionReadout() const;
    QString effectiveRadius() const;

    void selectToken(int token);
    void showTokenInTable(int token); // selects and scrolls to the token's row
    void setCameraPreset(views::CameraPreset preset);

    // Exports without dialogs; throw std::runtime_error naming the path on failure.
    void exportView(const QString& path, QSize size);
    void exportChart(ChartKind kind, const QString& path, QSize size);
    void exportTable(const QString& path);
    void saveSession(const QString& path);
    bool openSession(const QString& path); // false (and a message) if unreadable; state unchanged

    views::ParameterPanel* panel() const { return panel_; }
    AttentionPanel* attention() const { return attention_; }
    void showAttentionTab();
    views::VtkViewWidget* view() const { return view_; }
    views::ConeScene& scene() const { return *scene_; }
    QString autosavePath() const;
    QUndoStack* undoStack() const { return undo_; }
    SchemeFiles* schemeFiles() const { return schemeFiles_; }
    // A scheme file the user names ("python" or "positions"; empty path: ask with a dialog): loaded, shown, watched.
    // `importsFolder`: a Python scheme may import the .py files beside it. When it is off and the scheme fails to
    // import a module lying beside it, the window offers to turn it on (not when the user just turned it off).
    bool openSchemeFile(QString path, const QString& kind, bool importsFolder = false, bool offerFolder = true);

    // The window and its docks for a screen of `available` size: 1600x1000 where there is room, else the
    // screen, with narrower docks (what a 1280x720 laptop gets).
    void fitTo(const QRect& available);

protected:
    // Docks keep their share of the window's width as it grows or shrinks (maximised, they widen with it).
    void resizeEvent(QResizeEvent* event) override;

private:
    void buildUi();
    bool request(const session::ExplorerState& state, bool showInPanel);
    bool adopt(ReadoutRunner::Result result);
    void buildMenus();
    void buildFileMenu();
    // buildUi's parts.
    void buildBusyIndicator();
    void buildPositionTable();
    QWidget* buildReadouts();
    void buildAttentionPanel();
    void connectParameterPanel();
    void connectSceneView();
    void fitToScreen();
    QDockWidget* addScrollDock(const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area, int width);
    void refresh();
    void updateScene();
    void updateCharts();
    void updateReadoutLabels();
    void autosave();      // schedules a write after a short pause in the edits
    void writeAutosave(); // writes now
    session::SessionFile sessionFile() const;
    // Applied; not applied because its scheme file was not run (missing, failing or not trusted: the session
    // itself is fine); or not applied because it is wrong (lastError() says why).
    enum class SessionApplied { Yes, SchemeFileNotRun, No };
    SessionApplied applySession(const session::SessionFile& file);
    bool restoreAutosave(); // true when a session was restored (or is still computing)
    // The tab shown (Geometry or Attention) beside the autosave, in window.json: a restart came back on Geometry
    // whatever tab the user left (issue 72 item 9). Not part of the session: switching tabs is no undo step.
    void restoreShownTab();
    void saveShownTab(int index) const;
    void recordEdit();                                    // pushes the change since the last recorded settings onto the undo stack
    void applySnapshot(const session::SessionFile& file); // undo / redo: the explorer and the Attention tab as they were
    void captureCamera();
    void settleCamera(); // a camera move still waiting for cameraSaveTimer_ is the user's camera now
    void loadImage(const QString& path);
    views::SceneOptions sceneOptions() const;
    views::ChartPainter chartPainter(ChartKind kind) const;
    // The message in the panel and the status bar; the controls of `parameter` (a session key) are marked.
    void showError(const QString& message, const QString& parameter = {});
    void schemeFileReloaded(const geometry::CustomSchemeRef& ref);
    void exportWithDialog(ChartKind kind);

    session::Autosave autosave_;
    session::ExplorerState state_;
    ReadoutRunner* runner_ = nullptr;
    QLabel* busyLabel_ = nullptr;
    QProgressBar* busyBar_ = nullptr;
    session::Readouts readouts_;
    QString lastError_;
    QString schemeFileError_; // the watched scheme file's last failed reload, shown until it loads again
    bool cameraStale_ = false;
    bool showInPanel_ = true; // the newest request came from elsewhere than the panel: show its state there
    QTimer* autosaveTimer_ = nullptr;
    // The autosave and the undo stack take only states the user made (app/gui/edit_origin.h).
    EditOrigin origin_;
    QUndoStack* undo_ = nullptr;
    session::SessionFile recorded_; // the settings as of the last undo step
    QString nextEditName_;          // names the next recorded step ("Show region in 3-D")
    QImage image_;

    views::ParameterPanel* panel_ = nullptr;
    QDockWidget* parametersDock_ = nullptr;
    QDockWidget* readoutsDock_ = nullptr;
    views::VtkViewWidget* view_ = nullptr;
    std::unique_ptr<views::ConeScene> scene_;
    views::PositionTableModel* tableModel_ = nullptr;
    QSortFilterProxyModel* tableProxy_ = nullptr;
    QTableView* tableView_ = nullptr;
    views::ChartView *ptdView_ = nullptr, *profileView_ = nullptr, *priorView_ = nullptr, *frequencyView_ = nullptr;
    QLabel *ptdLabel_ = nullptr, *selectionLabel_ = nullptr, *warningLabel_ = nullptr;
    QTimer* cameraSaveTimer_ = nullptr;
    AttentionPanel* attention_ = nullptr;
    SchemeFiles* schemeFiles_ = nullptr;
    class QTabWidget* tabs_ = nullptr;
    bool attentionRan_ = false;
};

} // namespace ropescope::gui

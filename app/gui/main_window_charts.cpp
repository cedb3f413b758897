// MainWindow's readouts: the charts and labels beside the 3-D view, and the explorer's exports (the 3-D view
// as PNG, the charts as PNG/SVG/PDF, the position table as CSV/JSON). The window itself: main_window.cpp.
#include "app/gui/attention_panel.h"
#include "app/gui/file_dialogs.h"
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

ChartPainter MainWindow::chartPainter(ChartKind kind) const
{
    switch (kind) {
    case ChartKind::Ptd: return [c = ptdChart(readouts_)](QPainter& p, const QRectF& r) { paintBarChart(p, r, c); };
    case ChartKind::Profile: return [c = profileChart(readouts_)](QPainter& p, const QRectF& r) { paintProfileChart(p, r, c); };
    case ChartKind::Prior: return [c = priorChart(readouts_)](QPainter& p, const QRectF& r) { paintHeatmapChart(p, r, c); };
    case ChartKind::Frequencies:
        return [c = frequencyChart(readouts_.table)](QPainter& p, const QRectF& r) { paintFrequencyChart(p, r, c); };
    }
    return {};
}

void MainWindow::updateCharts()
{
    const bool metrics = !readouts_.ptdBySchemes.empty();
    ptdView_->setPainter(metrics ? chartPainter(ChartKind::Ptd) : ChartPainter());
    profileView_->setPainter(metrics ? chartPainter(ChartKind::Profile) : ChartPainter());
    priorView_->setPainter(metrics ? chartPainter(ChartKind::Prior) : ChartPainter());
    frequencyView_->setPainter(readouts_.table.size() > 0 ? chartPainter(ChartKind::Frequencies) : ChartPainter());
}

QString MainWindow::ptdReadout() const
{
    return gui::ptdReadout(readouts_);
}

QString MainWindow::selectionReadout() const
{
    return gui::selectionReadout(readouts_);
}

QString MainWindow::effectiveRadius() const
{
    return gui::effectiveRadius(readouts_, state_.params);
}

void MainWindow::updateReadoutLabels()
{
    ptdLabel_->setText(ptdReadout());
    selectionLabel_->setText(selectionReadout());
    QStringList warnings;
    for (const std::string& w : readouts_.warnings)
        warnings << QString::fromStdString(w);
    warningLabel_->setText(warnings.join('\n'));
}

void MainWindow::exportView(const QString& path, QSize size)
{
    settleCamera();
    QImage image;
    try {
        OffscreenView offscreen(size);
        offscreen.scene().update(readouts_.table, sceneOptions());
        // The window's own camera if the user moved it, else the preset fitted to the export's aspect
        // ratio (the window's camera may be stale while another tab is shown).
        if (state_.cameraState) {
            offscreen.scene().setCameraState(*state_.cameraState);
        } else {
            offscreen.scene().applyCamera(state_.camera);
        }
        image = offscreen.grab();
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path.toStdString() + ": " + e.what());
    }
    QJsonObject meta = state_.toJson();
    meta["resolution"] = QString("%1x%2").arg(size.width()).arg(size.height());
    io::writeFileAtomically(path, encodePng(image, meta));
}

void MainWindow::exportChart(ChartKind kind, const QString& path, QSize size)
{
    FigureFormat format;
    try {
        format = figureFormatFor(path);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    QJsonObject meta = state_.toJson();
    const char* names[] = {"ptd", "profile", "prior", "frequencies"};
    meta["chart"] = names[static_cast<int>(kind)];
    io::writeFileAtomically(path, renderFigure(chartPainter(kind), size, format, meta));
    if (format != FigureFormat::Png) // SVG/PDF readers drop custom metadata: keep a sidecar
        io::writeFileAtomically(path + ".json", QJsonDocument(meta).toJson());
}

void MainWindow::exportTable(const QString& path)
{
    const bool json = path.endsWith(".json", Qt::CaseInsensitive);
    const QByteArray bytes = json ? io::positionTableJson(readouts_.table, state_.toJson()) : io::positionTableCsv(readouts_.table);
    io::writeFileAtomically(path, bytes);
}

} // namespace ropescope::gui

#pragma once
// What the window's GUI suites share (one suite per window part: explorer, session and undo, attention, bias):
// the includes, the helpers that run the Attention tab, and main(), which gives each suite a settings folder
// of its own (recent files, trusted scheme files, dialog folders are never the user's) and VTK's surface format.
#include "app/gui/attention/attention_choices.h"
#include "app/gui/attention/experts_page.h"
#include "app/gui/attention/layer_heads_page.h"
#include "app/gui/attention/region_page.h"
#include "app/gui/attention/schemes_page.h"
#include "app/gui/attention_panel.h"
#include "app/gui/bias_view.h"
#include "app/gui/figure_export.h"
#include "app/gui/main_window.h"
#include "app/gui/settings_undo.h"
#include "core/io/position_table_io.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/positional_bias.h"
#include "core/model/engine/model_config.h"
#include "tests/support/model_folder.h"
#include "views/charts/attention_figures.h"
#include "views/charts/readout_charts.h"
#include "views/charts/region_chart.h"
#include "views/widgets/chart_view.h"
#include "views/widgets/parameter_panel.h"
#include "views/widgets/vtk_view_widget.h"

#include <cmath>
#include <map>

#include <QApplication>
#include <QClipboard>
#include <QCheckBox>
#include <QComboBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QProgressBar>
#include <QTableView>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalSpy>
#include <QMap>
#include <QSlider>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QSpinBox>
#include <QUndoStack>
#include <QStatusBar>
#include <QMenuBar>
#include <QMenu>
#include <QtTest>

#include <vtkCamera.h>
#include <vtkCoordinate.h>
#include <vtkNew.h>
#include <vtkRenderer.h>

using ropescope::gui::ChartKind;
using ropescope::gui::MainWindow;
using ropescope::gui::SchemeFiles;
namespace geometry = ropescope::geometry;

// Shows the window and its Attention tab, which runs the bundled model on the sample; true when that
// first run finished and succeeded (`finished` watches the tab's runFinished).
inline bool firstAttentionRun(MainWindow& w, QSignalSpy& finished)
{
    w.show();
    if (!QTest::qWaitForWindowExposed(&w))
        return false;
    w.showAttentionTab();
    // A window that comes back on the Attention tab (window.json) runs from its constructor: that run may finish
    // while the window is being exposed, before a wait would start listening.
    return (!finished.isEmpty() || finished.wait(60000)) && finished.first().at(0).toBool();
}

// After the first run, opens `folder` in the Attention tab (loaded on a worker, then run); true when exactly
// that one run finished and succeeded.
inline bool openedInAttentionTab(MainWindow& w, QSignalSpy& finished, const QString& folder)
{
    if (!firstAttentionRun(w, finished))
        return false;
    finished.clear();
    w.attention()->openModel(folder);
    return QTest::qWaitFor([&] { return !w.attention()->busy(); }, 60000) && finished.count() == 1 && finished.first().at(0).toBool();
}

inline QString writeFileForGui(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(bytes);
    return path;
}

namespace ropescope::test {

template <typename Suite> int runGuiSuite(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "xcb");
    ropescope::views::VtkViewWidget::setDefaultSurfaceFormat();
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    QApplication app(argc, argv);
    Suite suite;
    return QTest::qExec(&suite, argc, argv);
}

} // namespace ropescope::test

#define ROPESCOPE_GUI_SUITE_MAIN(Suite)                                                                                                    \
    int main(int argc, char** argv)                                                                                                        \
    {                                                                                                                                      \
        return ropescope::test::runGuiSuite<Suite>(argc, argv);                                                                            \
    }

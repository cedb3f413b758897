// GUI tests: the real explorer window under Xvfb (ctest runs this binary through xvfb-run).
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
#include "tests/support/model_folder.h"
#include "views/charts/attention_figures.h"
#include "views/charts/region_chart.h"
#include "views/widgets/chart_view.h"
#include "views/widgets/parameter_panel.h"
#include "views/widgets/vtk_view_widget.h"

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

namespace {

// Shows the window and its Attention tab, which runs the bundled model on the sample; true when that
// first run finished and succeeded (`finished` watches the tab's runFinished).
bool firstAttentionRun(MainWindow& w, QSignalSpy& finished)
{
    w.show();
    if (!QTest::qWaitForWindowExposed(&w))
        return false;
    w.showAttentionTab();
    return finished.wait(60000) && finished.first().at(0).toBool();
}

// After the first run, opens `folder` in the Attention tab (loaded on a worker, then run); true when exactly
// that one run finished and succeeded.
bool openedInAttentionTab(MainWindow& w, QSignalSpy& finished, const QString& folder)
{
    if (!firstAttentionRun(w, finished))
        return false;
    finished.clear();
    w.attention()->openModel(folder);
    return QTest::qWaitFor([&] { return !w.attention()->busy(); }, 60000) && finished.count() == 1 && finished.first().at(0).toBool();
}

} // namespace

namespace {
QString writeFileForGui(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(bytes);
    return path;
}
} // namespace

class TestGui : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void firstLaunchShowsTheDefaultCone()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
        QCOMPARE(w.state().params.circle.alpha, 0.5);
        QCOMPARE(w.state().params.circle.radius, 10.0);
        QVERIFY2(w.ptdReadout().startsWith("PTD 0.000000 (circle)"), qPrintable(w.ptdReadout()));
        QCOMPARE(w.scene().world().rows(), Eigen::Index(74));
        QVERIFY(QFile::exists(w.autosavePath()));
    }

    // The rotated fraction (partial rotary): the tables, frequencies and prior cover the rotated dims, and
    // sessions keep it.
    void partialRotaryIsARotarySetting()
    {
        QTemporaryDir dir;
        {
            MainWindow w(dir.path());
            w.resize(1280, 720);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            auto* fraction = w.panel()->findChild<QDoubleSpinBox*>("partialRotary");
            QVERIFY(fraction);
            QCOMPARE(fraction->value(), 1.0);
            const QString fullPrior = w.selectionReadout();
            fraction->setValue(0.25);
            QCOMPARE(w.state().params.rotary.partial, 0.25);
            QCOMPARE(w.readouts().table.rotary.rotaryDim(), 32);              // of head_dim 128
            QCOMPARE(w.readouts().table.allocation.toString(), std::string("sectioned[4,6,6]")); // 16 pairs
            QVERIFY2(w.selectionReadout() != fullPrior, qPrintable(w.selectionReadout())); // the prior has fewer pairs
            if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty()) {
                if (auto* scroll = qobject_cast<QScrollArea*>(w.panel()->parentWidget() ? w.panel()->parentWidget()->parentWidget() : nullptr))
                    scroll->ensureWidgetVisible(fraction);
                w.grab().save(shots + "/partial_rotary_1280.png");
            }
            w.saveSession(dir.filePath("partial.ropescope.json"));
        }
        MainWindow restored(dir.filePath("other"));
        QVERIFY(restored.openSession(dir.filePath("partial.ropescope.json")));
        QCOMPARE(restored.state().params.rotary.partial, 0.25);
        QCOMPARE(restored.panel()->findChild<QDoubleSpinBox*>("partialRotary")->value(), 0.25);
    }

    // A Python scheme in the explorer (issue "Your own scheme"): opened, its PARAMETERS as controls, watched
    // (saving the file re-runs it and the readouts follow), a syntax error keeps the last positions and shows
    // file:line; a session naming a file whose content is not trusted runs nothing and loses nothing.
    void pythonSchemeIsWatchedAndTrusted()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("my_scheme.py");
        const auto write = [&](const QByteArray& text) {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(text);
        };
        // Unique content: trust is per content, and other runs of this suite must not have trusted it.
        const QByteArray unique = "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) + "\n";
        const QByteArray scheme = unique + R"PY(import numpy as np
PARAMETERS = {"spread": (1.0, 0.1, 10.0)}

def positions(layout, spread):
    out = np.zeros((3, layout.tokens))
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            out[:, s.start:s.start + s.length] = nxt + np.arange(s.length)
            nxt += s.length
            continue
        r, c = np.meshgrid(np.arange(s.rows), np.arange(s.cols), indexing="ij")
        for f in range(s.frames):
            b = s.start + f * s.rows * s.cols
            e = b + s.rows * s.cols
            out[0, b:e] = nxt + OFFSET
            out[1, b:e] = nxt + spread * r.ravel()
            out[2, b:e] = nxt + spread * c.ravel()
        nxt = out[:, s.start:s.start + s.length].max() + 1
    return out
)PY";
        write("OFFSET = 0.0\n" + scheme);
        const QString sessionDir = dir.filePath("session");
        {
            MainWindow w(sessionDir);
            w.resize(1280, 720);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            QVERIFY2(w.openSchemeFile(file, "python"), qPrintable(w.lastError()));
            QTRY_VERIFY(!w.readoutsBusy());
            QCOMPARE(QString::fromStdString(w.readouts().table.customScheme), QString("my_scheme.py"));
            QCOMPARE(w.panel()->schemeBox()->currentText(), QString("my_scheme.py"));
            QVERIFY2(w.ptdReadout().contains("(my_scheme.py)"), qPrintable(w.ptdReadout()));
            // Its parameter is a control, and the value reaches positions().
            auto* spread = w.panel()->findChild<QDoubleSpinBox*>("paramBox_spread");
            QVERIFY(spread);
            const QString atOne = w.ptdReadout();
            spread->setValue(3.0);
            QTRY_VERIFY(!w.readoutsBusy());
            QCOMPARE(w.state().params.custom->values.at("spread"), 3.0);
            const geometry::PositionTable& t = w.readouts().table;
            const int last = t.blocks.front().end() - 1; // row 7, col 7 of the 8x8 image after 4 text tokens
            QCOMPARE(t.positions(last, 1), 4 + 3.0 * 7);
            QVERIFY(w.ptdReadout() != atOne);
            // Saved in the editor: the watcher re-runs it and the readouts change (OFFSET moves the t axis).
            const QString beforeEdit = w.ptdReadout();
            write("OFFSET = 5.0\n" + scheme);
            QTRY_VERIFY_WITH_TIMEOUT(w.ptdReadout() != beforeEdit, 10000);
            QCOMPARE(w.readouts().table.positions(last, 0), 4 + 5.0);
            QCOMPARE(w.state().params.custom->values.at("spread"), 3.0); // the value set survives the reload
            // A syntax error: the last positions stay, the file's error (file:line) is in the window.
            const Eigen::MatrixXd kept = w.readouts().table.positions;
            write("OFFSET = 5.0\ndef positions(layout):\n    return [1,\n");
            QTRY_VERIFY_WITH_TIMEOUT(!w.panel()->customControls()->fileError().isEmpty(), 10000);
            QVERIFY2(w.panel()->customControls()->fileError().contains("my_scheme.py\", line 3") ||
                         w.panel()->customControls()->fileError().contains("my_scheme.py:3"),
                     qPrintable(w.panel()->customControls()->fileError()));
            QVERIFY2(w.lastError().contains("my_scheme.py:3: SyntaxError"), qPrintable(w.lastError()));
            QVERIFY(w.readouts().table.positions == kept);
            if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty()) {
                if (auto* scroll = qobject_cast<QScrollArea*>(w.panel()->parentWidget() ? w.panel()->parentWidget()->parentWidget() : nullptr))
                    scroll->ensureWidgetVisible(w.panel()->customControls());
                w.grab().save(shots + "/python_scheme_error_1280.png");
            }
            // Fixed again: it loads, the error goes.
            write("OFFSET = 2.0\n" + scheme);
            QTRY_VERIFY_WITH_TIMEOUT(w.panel()->customControls()->fileError().isEmpty(), 10000);
            QTRY_COMPARE_WITH_TIMEOUT(w.readouts().table.positions(last, 0), 4 + 2.0, 10000);
            if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
                w.grab().save(shots + "/python_scheme_1280.png");
            w.saveSession(dir.filePath("mine.ropescope.json"));
        } // the autosave names the file too
        QFile autosave(QDir(sessionDir).filePath("autosave.ropescope.json"));
        QVERIFY(autosave.open(QIODevice::ReadOnly));
        const QByteArray saved = autosave.readAll();
        autosave.close();
        QVERIFY(saved.contains("my_scheme.py"));

        // Someone changes the file: its new content is not trusted. The restore asks, is told no, runs
        // nothing, and leaves the autosave as it was.
        write("OFFSET = 9.0\n" + scheme);
        int asked = 0;
        bool sawChanged = false;
        SchemeFiles::setDefaultTrustPrompt([&](const QString& path, const QString&, bool changed) {
            ++asked;
            sawChanged = changed && path == file;
            return false;
        });
        {
            MainWindow w(sessionDir);
            QCOMPARE(asked, 1);
            QVERIFY(sawChanged);
            QVERIFY(!w.state().params.custom);
            QVERIFY2(w.lastError().contains("was not run: it is not trusted"), qPrintable(w.lastError()));
            QVERIFY(!w.openSession(dir.filePath("mine.ropescope.json")));
            QCOMPARE(asked, 2);
            QVERIFY(!w.state().params.custom);
        }
        QVERIFY(autosave.open(QIODevice::ReadOnly));
        QCOMPARE(autosave.readAll(), saved);
        autosave.close();
        // Trusted once: the same content opens without asking again.
        SchemeFiles::setDefaultTrustPrompt([&](const QString&, const QString&, bool) { ++asked; return true; });
        {
            MainWindow w(dir.filePath("third"));
            QVERIFY2(w.openSession(dir.filePath("mine.ropescope.json")), qPrintable(w.lastError()));
            QCOMPARE(asked, 3);
            QTRY_VERIFY(!w.readoutsBusy());
            QCOMPARE(w.state().params.custom->values.at("spread"), 3.0);
            QCOMPARE(w.readouts().table.positions(w.readouts().table.blocks.front().end() - 1, 0), 4 + 9.0);
        }
        {
            MainWindow w(dir.filePath("fourth"));
            QVERIFY(w.openSession(dir.filePath("mine.ropescope.json")));
            QCOMPARE(asked, 3);
        }
        SchemeFiles::setDefaultTrustPrompt({});
    }

    // A scheme file that came from a session (trusted then) and changes on disk asks again before the new
    // content runs (issue 40, H2); refused, the window keeps the last positions and says why. A file the user
    // opened in this window reloads without asking.
    void sessionSchemeChangedOnDiskAsksAgain()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("watched.py");
        const auto write = [&](double offset) {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write("# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) + "\nOFFSET = " + QByteArray::number(offset)
                    + "\ndef positions(layout):\n    return [OFFSET + i for i in range(layout.tokens)]\n");
        };
        write(0);
        {
            MainWindow w(dir.filePath("s"));
            QVERIFY2(w.openSchemeFile(file, "python"), qPrintable(w.lastError()));
            QTRY_VERIFY(!w.readoutsBusy());
            w.saveSession(dir.filePath("watched.ropescope.json"));
        }
        int asked = 0;
        bool answer = false;
        SchemeFiles::setDefaultTrustPrompt([&](const QString& path, const QString&, bool changed) {
            ++asked;
            return changed && path == file && answer;
        });
        MainWindow w(dir.filePath("t"));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY2(w.openSession(dir.filePath("watched.ropescope.json")), qPrintable(w.lastError()));
        QCOMPARE(asked, 0); // its content was trusted when the user opened it
        QTRY_VERIFY(!w.readoutsBusy());
        QCOMPARE(w.readouts().table.positions(0, 0), 0.0);
        write(7); // changed behind the window's back: asked, refused, nothing runs
        QTRY_COMPARE_WITH_TIMEOUT(asked, 1, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(w.lastError().contains("changed on disk and was not run"), 10000);
        QCOMPARE(w.readouts().table.positions(0, 0), 0.0);
        answer = true;
        write(9); // asked again for this new content, allowed: it runs
        QTRY_COMPARE_WITH_TIMEOUT(asked, 2, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(w.readouts().table.positions(0, 0), 9.0, 10000);
        // Opened by the user in this window: later saves reload without a question.
        QVERIFY(w.openSchemeFile(file, "python"));
        write(11);
        QTRY_COMPARE_WITH_TIMEOUT(w.readouts().table.positions(0, 0), 11.0, 10000);
        QCOMPARE(asked, 2);
        SchemeFiles::setDefaultTrustPrompt({});
    }

    // A broken save keeps its error on screen while a slider moves (the last good content runs), and putting
    // the good content back clears it at once (issue 45, item 7).
    void schemeFileErrorLastsUntilTheFileLoads()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("edited.py");
        const QByteArray good = "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) + "\nPARAMETERS = {'k': (1.0, 0.0, 10.0)}\n"
                                "def positions(layout, k):\n    return [k * i for i in range(layout.tokens)]\n";
        writeFileForGui(file, good);
        MainWindow w(dir.filePath("s"));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY2(w.openSchemeFile(file, "python"), qPrintable(w.lastError()));
        QTRY_VERIFY(!w.readoutsBusy());
        writeFileForGui(file, "def positions(layout, k):\n    return [k *\n");
        QTRY_VERIFY_WITH_TIMEOUT(!w.panel()->customControls()->fileError().isEmpty(), 10000);
        w.panel()->findChild<QDoubleSpinBox*>("paramBox_k")->setValue(4.0); // runs the last good content
        QTRY_VERIFY(!w.readoutsBusy());
        QTRY_COMPARE(w.readouts().table.positions(1, 0), 4.0);
        QVERIFY2(!w.panel()->customControls()->fileError().isEmpty(), "a slider move cleared the broken file's error");
        writeFileForGui(file, good); // the very content that is running: the error goes
        QTRY_VERIFY_WITH_TIMEOUT(w.panel()->customControls()->fileError().isEmpty(), 10000);
    }

    // No key is bound twice (Ctrl+Shift+Z was, to Redo, which Qt then called ambiguous and dropped), Redo
    // answers Ctrl+Shift+Z, and a Help menu offers About, Keyboard shortcuts and Documentation (issue 45).
    void everyShortcutIsBoundOnceAndHelpIsThere()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QMap<QString, QString> owner;
        for (QAction* a : w.findChildren<QAction*>())
            for (const QKeySequence& k : a->shortcuts()) {
                const QString key = k.toString();
                QVERIFY2(!owner.contains(key), qPrintable(key + " is bound to '" + owner.value(key) + "' and '" + a->text() + "'"));
                owner[key] = a->text();
            }
        QCOMPARE(owner.value("Ctrl+Shift+Z"), w.findChild<QAction*>("redo")->text());
        QStringList help;
        for (QAction* m : w.menuBar()->actions())
            if (m->text().remove('&') == "Help")
                for (QAction* a : m->menu()->actions())
                    help << a->text().remove('&');
        QCOMPARE(help, (QStringList{"Keyboard shortcuts", "Documentation", "About RopeScope"}));
    }

    // A scheme that imports its neighbour opens with its folder importable (what the window offers when the
    // import fails); the panel's box shows it, sessions keep it, and clearing the box reloads without it.
    void schemeImportsItsFolderWhenAsked()
    {
        QTemporaryDir dir;
        writeFileForGui(dir.filePath("near.py"), "SHIFT = 3.0\n");
        const QString file = writeFileForGui(dir.filePath("far.py"), "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch())
                                                                         + "\nimport near\ndef positions(layout):\n    return [near.SHIFT + i for i in range(layout.tokens)]\n");
        MainWindow w(dir.filePath("s"));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY2(w.openSchemeFile(file, "python", true), qPrintable(w.lastError()));
        QTRY_VERIFY(!w.readoutsBusy());
        QCOMPARE(w.readouts().table.positions(0, 0), 3.0);
        QVERIFY(w.state().params.custom->importsFolder);
        auto* box = w.panel()->findChild<QCheckBox*>("customSchemeImportsFolder");
        QVERIFY(box && box->isVisible() && box->isChecked());
        box->setChecked(false); // without its folder it cannot import near.py: refused, the box goes back
        QVERIFY2(w.lastError().contains("No module named 'near'"), qPrintable(w.lastError()));
        QTRY_VERIFY(box->isChecked());
        QCOMPARE(w.readouts().table.positions(0, 0), 3.0); // still the scheme with its folder
        QVERIFY(w.state().params.custom->importsFolder);
    }

    // The scheme's worker crashes in the middle of a slider drag (issue 40, H5): the window stays up, says
    // so, keeps the last positions, and the next value runs in a fresh worker.
    void workerCrashWhileDragging()
    {
        QTemporaryDir dir;
        const QString file = writeFileForGui(dir.filePath("fragile.py"),
                                             "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) + "\n"
                                             "import ctypes\nPARAMETERS = {'k': (1.0, 0.0, 10.0)}\n"
                                             "def positions(layout, k):\n    if 4.5 < k < 5.5:\n        ctypes.string_at(0)\n"
                                             "    return [k * i for i in range(layout.tokens)]\n");
        MainWindow w(dir.filePath("s"));
        w.resize(1280, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY2(w.openSchemeFile(file, "python"), qPrintable(w.lastError()));
        auto* slider = w.panel()->findChild<QSlider*>("param_k");
        QVERIFY(slider);
        QTRY_VERIFY(!w.readoutsBusy());
        QCOMPARE(w.readouts().table.positions(1, 0), 1.0);
        // The drag: every step of the slider from k = 1 to k = 5 (which crashes the worker).
        for (int v = slider->value(); v <= (slider->maximum() - slider->minimum()) / 2; v += std::max(1, slider->maximum() / 50)) {
            slider->setValue(v);
            QCoreApplication::processEvents();
        }
        w.panel()->findChild<QDoubleSpinBox*>("paramBox_k")->setValue(5.0);
        QTRY_VERIFY(!w.readoutsBusy());
        QTRY_VERIFY_WITH_TIMEOUT(w.lastError().contains("the scheme's process ended (signal 11"), 10000);
        QVERIFY(w.isVisible());
        const double kept = w.readouts().table.positions(1, 0);
        QVERIFY2(kept != 5.0 && kept >= 1.0, qPrintable(QString::number(kept)));
        w.panel()->findChild<QDoubleSpinBox*>("paramBox_k")->setValue(7.0); // a fresh worker takes the next value
        QTRY_COMPARE_WITH_TIMEOUT(w.readouts().table.positions(1, 0), 7.0, 10000);
    }

    // File > Open position table: a table `positions` wrote opens with its own layout and exactly its
    // numbers; a layout of another length is refused naming both counts, the table staying on screen.
    void positionTableOpensWithItsLayout()
    {
        QTemporaryDir dir;
        geometry::SchemeParams circle;
        circle.kind = geometry::SchemeKind::Circle;
        circle.circle.alpha = 0.3;
        const geometry::PositionTable want = geometry::buildPositionTable(geometry::parseLayout("text:3,image:2x3,text:2,video:2x2x2,text:1"), circle);
        const QString csv = dir.filePath("table.csv");
        {
            QFile f(csv);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(ropescope::io::positionTableCsv(want));
        }
        MainWindow w(dir.filePath("session"));
        QVERIFY2(w.openSchemeFile(csv, "positions"), qPrintable(w.lastError()));
        QTRY_VERIFY(!w.readoutsBusy());
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:3,image:2x3,text:2,video:2x2x2,text:1"));
        QVERIFY(w.readouts().table.positions == want.positions);
        QCOMPARE(w.panel()->schemeBox()->currentText(), QString("table.csv"));
        ropescope::session::ExplorerState longer = w.state();
        longer.layout = "text:40";
        QVERIFY(!w.applyState(longer));
        QVERIFY2(w.lastError().contains("table.csv holds positions for 20 tokens") && w.lastError().contains("has 40"), qPrintable(w.lastError()));
        QVERIFY(w.readouts().table.positions == want.positions);
    }

    void alphaSliderChangesReadoutAndScene()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        // Tilt the text vector so the ring is no longer orthogonal to the text axis: PTD then depends on alpha.
        w.panel()->findChild<QDoubleSpinBox*>("vectorT")->setValue(2.0);
        const QString before = w.ptdReadout();
        const Eigen::MatrixX3d worldBefore = w.scene().world();
        QVERIFY(!before.startsWith("PTD 0.000000"));
        w.panel()->alphaSlider()->setValue(200); // alpha 0.2, as a user dragging the slider
        QCOMPARE(w.state().params.circle.alpha, 0.2);
        QVERIFY2(w.ptdReadout() != before, qPrintable(w.ptdReadout()));
        QVERIFY((w.scene().world() - worldBefore).cwiseAbs().maxCoeff() > 0.1);
        // The same on the default (1,1,1) vector: PTD stays 0 but the crowding readout moves.
        w.panel()->findChild<QDoubleSpinBox*>("vectorT")->setValue(1.0);
        const QString untilted = w.ptdReadout();
        QVERIFY(untilted.startsWith("PTD 0.000000"));
        w.panel()->alphaSlider()->setValue(900);
        QVERIFY(w.ptdReadout().startsWith("PTD 0.000000"));
        QVERIFY(w.ptdReadout() != untilted);
    }

    void clickingATokenSelectsIt()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(200);
        const QString before = w.selectionReadout();
        QVERIFY2(before.startsWith("Token 3:"), qPrintable(before));
        // Project text token 0 to the view's pixels and click it.
        auto* view = w.view();
        view->repaint();
        vtkNew<vtkCoordinate> c;
        c->SetCoordinateSystemToWorld();
        const auto& world = w.scene().world();
        c->SetValue(world(0, 0), world(0, 1), world(0, 2));
        const double* d = c->GetComputedDoubleDisplayValue(view->renderer());
        const double ratio = view->devicePixelRatioF();
        const QPoint at(static_cast<int>(d[0] / ratio), static_cast<int>(view->height() - d[1] / ratio));
        QVERIFY(view->rect().contains(at));
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at);
        QCOMPARE(w.state().selectedToken, 0);
        QTest::qWait(500);
        QVERIFY(!w.state().cameraState); // a click picks, it does not make the preset camera the user's
        QVERIFY2(w.selectionReadout().startsWith("Token 0:"), qPrintable(w.selectionReadout()));
        QVERIFY(w.selectionReadout() != before);
        // The profile of token 0 is further from the image than token 3's.
        w.selectToken(72);
        QVERIFY(w.selectionReadout().startsWith("Token 72:"));
    }

    void exportsWriteValidFiles()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QString png = dir.filePath("view.png");
        w.exportView(png, QSize(1000, 640));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(1000, 640));
        QVERIFY(image.text("ropescope").contains("text:4,image:8x8,text:6"));
        int drawn = 0; // pixels that are not the background: the cone, tokens and labels
        for (int y = 0; y < image.height(); y += 2)
            for (int x = 0; x < image.width(); x += 2)
                drawn += image.pixelColor(x, y) != image.pixelColor(2, 2);
        QVERIFY2(drawn > 1000, qPrintable(QString::number(drawn)));

        for (ChartKind kind : {ChartKind::Ptd, ChartKind::Profile, ChartKind::Prior, ChartKind::Frequencies}) {
            const QString base = dir.filePath(QString("chart%1").arg(static_cast<int>(kind)));
            w.exportChart(kind, base + ".png", QSize(900, 600));
            QCOMPARE(QImage(base + ".png").size(), QSize(900, 600));
            w.exportChart(kind, base + ".svg", QSize(900, 600));
            QFile svg(base + ".svg");
            QVERIFY(svg.open(QIODevice::ReadOnly));
            const QByteArray svgBytes = svg.readAll();
            QVERIFY(svgBytes.contains("<svg") && svgBytes.contains("</svg>"));
            QVERIFY(QFile::exists(base + ".svg.json"));
            w.exportChart(kind, base + ".pdf", QSize(900, 600));
            QFile pdf(base + ".pdf");
            QVERIFY(pdf.open(QIODevice::ReadOnly));
            QVERIFY(pdf.readAll().startsWith("%PDF"));
        }
        QVERIFY_EXCEPTION_THROWN(w.exportChart(ChartKind::Ptd, dir.filePath("chart.bmp"), QSize(100, 100)), std::runtime_error);

        w.exportTable(dir.filePath("table.csv"));
        QFile csv(dir.filePath("table.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QVERIFY(csv.readLine().startsWith("index,modality,segment,frame,row,col,p0,p1,p2"));
        w.exportTable(dir.filePath("table.json"));
        QFile json(dir.filePath("table.json"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(json.readAll()).object()["tokens"].toArray().size(), 74);
        // A failed write leaves nothing behind.
        QVERIFY_EXCEPTION_THROWN(w.exportTable(dir.filePath("missing/dir/t.csv")), std::runtime_error);
        QVERIFY(!QFile::exists(dir.filePath("missing/dir/t.csv")));
    }

    void sessionsRoundTripAndAutosave()
    {
        QTemporaryDir dir;
        {
            MainWindow w(dir.path());
            w.panel()->alphaSlider()->setValue(300);
            w.panel()->schemeBox()->setCurrentText("vrope");
            w.selectToken(1);
            w.saveSession(dir.filePath("mine.ropescope.json"));
        }
        {
            MainWindow restored(dir.path()); // from the autosave
            QCOMPARE(restored.state().params.circle.alpha, 0.3);
            QCOMPARE(QString(ropescope::geometry::schemeName(restored.state().params.kind)), QString("vrope"));
            QCOMPARE(restored.state().selectedToken, 1);
        }
        QTemporaryDir other;
        MainWindow fresh(other.path());
        QVERIFY(fresh.openSession(dir.filePath("mine.ropescope.json")));
        QCOMPARE(fresh.state().params.circle.alpha, 0.3);
    }

    void attentionSettingsAreSaved()
    {
        // The Attention tab's question, choices and view settings travel with the session and the autosave.
        QTemporaryDir dir;
        {
            MainWindow w(dir.path());
            w.attention()->setQuestion("where is the red circle?");
            w.attention()->useExplorerScheme(true);
            w.attention()->findChild<QSlider*>("attentionLayer")->setValue(1);
            w.attention()->findChild<QComboBox*>("head")->setCurrentIndex(3);
            QVERIFY(QTest::qWaitFor([&] { return !w.attention()->busy(); }, 60000));
            w.saveSession(dir.filePath("with-attention.ropescope.json"));
        }
        MainWindow restored(dir.path());
        QCOMPARE(restored.attention()->findChild<QLineEdit*>("question")->text(), QString("where is the red circle?"));
        QVERIFY(restored.attention()->findChild<QCheckBox*>("explorerScheme")->isChecked());
        QCOMPARE(restored.attention()->findChild<QSlider*>("attentionLayer")->value(), 1);
        QCOMPARE(restored.attention()->findChild<QComboBox*>("head")->currentIndex(), 3);
        QVERIFY(!restored.attention()->busy()); // restoring runs nothing
        QFile saved(dir.filePath("with-attention.ropescope.json"));
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(saved.readAll()).object()["attention"].toObject()["question"].toString(),
                 QString("where is the red circle?"));
    }

    void theWheelChangesOnlyAFocusedControl()
    {
        // Scrolling the Parameters dock over a spin box or combo box used to change it, and autosave it.
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* headDim = w.panel()->findChild<QSpinBox*>("headDim");
        auto* colour = w.panel()->findChild<QComboBox*>("colour");
        QVERIFY(headDim && colour);
        w.setFocus();
        auto wheel = [](QWidget* target) {
            const QPointF at(target->width() / 2.0, target->height() / 2.0);
            QWheelEvent event(at, target->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(target, &event);
        };
        const int before = headDim->value();
        const int colourBefore = colour->currentIndex();
        QVERIFY(!headDim->hasFocus() && !colour->hasFocus());
        wheel(headDim);
        wheel(headDim->findChild<QLineEdit*>());
        wheel(colour);
        QCOMPARE(headDim->value(), before);
        QCOMPARE(colour->currentIndex(), colourBefore);
        QCOMPARE(w.state().params.rotary.headDim, before);
        // Focused (clicked or tabbed into), the control takes the wheel as usual.
        w.activateWindow();
        QApplication::setActiveWindow(&w);
        headDim->setFocus(Qt::OtherFocusReason);
        QTRY_VERIFY(headDim->hasFocus());
        wheel(headDim);
        QVERIFY(headDim->value() != before);
    }

    void undoRestoresShowIn3dAndSliderDrags()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        QUndoStack* undo = w.undoStack();
        // A drag of the alpha slider is one step.
        const QByteArray start = ropescope::gui::settingsKey({w.state(), w.attention()->settings()});
        for (int v = 510; v <= 600; v += 10)
            w.panel()->alphaSlider()->setValue(v);
        QCOMPARE(w.state().params.circle.alpha, 0.6);
        QVERIFY2(undo->count() == 1, qPrintable(undo->text(0)));
        QCOMPARE(undo->undoText(), QString("Change alpha"));
        const ropescope::session::ExplorerState tuned = w.state();
        const QByteArray tunedKey = ropescope::gui::settingsKey({w.state(), w.attention()->settings()});

        // Show in 3-D replaces the layout, scheme, AGE and highlights: one step, said in the status bar.
        ropescope::gui::AttentionPanel* a = w.attention();
        a->selectRegion(0, 0, 2, 3);
        QTRY_VERIFY_WITH_TIMEOUT(!a->regionShares().empty(), 30000);
        a->findChild<QPushButton*>("showRegionIn3d")->click();
        QVERIFY(w.state().layout != tuned.layout);
        QVERIFY(!w.state().highlighted.empty());
        QCOMPARE(undo->undoText(), QString("Show region in 3-D"));
        QVERIFY2(w.statusBar()->currentMessage().contains("Show in 3-D replaced the explorer's layout " + QString::fromStdString(tuned.layout)),
                 qPrintable(w.statusBar()->currentMessage()));
        // Ctrl+Z: the explorer exactly as it was.
        undo->undo();
        QCOMPARE(ropescope::gui::settingsKey({w.state(), w.attention()->settings()}), tunedKey);
        QCOMPARE(QString::fromStdString(w.state().layout), QString::fromStdString(tuned.layout));
        QVERIFY(w.state().highlighted.empty());
        QCOMPARE(w.panel()->alphaSlider()->value(), 600);
        // Redo shows it again; Clear highlights removes the marks (undoable too).
        undo->redo();
        QVERIFY(!w.state().highlighted.empty());
        for (QAction* action : w.findChildren<QAction*>())
            if (action->text() == "Clear &highlights")
                action->trigger();
        QVERIFY(w.state().highlighted.empty());
        undo->undo();
        QVERIFY(!w.state().highlighted.empty());
        // Back to the start, two steps more.
        undo->undo();
        undo->undo();
        QCOMPARE(ropescope::gui::settingsKey({w.state(), w.attention()->settings()}), start);
        QCOMPARE(w.state().params.circle.alpha, 0.5);
    }

    void aBadModelFolderIsSaidInSight()
    {
        // The error used to appear only at the bottom of the scrolled Attention panel, out of sight at 1280x720.
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1280, 720);
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        QDir().mkpath(dir.filePath("broken"));
        QFile config(dir.filePath("broken/config.json"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("{\"model_type\": \"qwen2_vl\", ");
        config.close();
        finished.clear();
        w.attention()->openModel(dir.filePath("broken"));
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), false);
        QVERIFY2(w.statusBar()->currentMessage().contains("config.json"), qPrintable(w.statusBar()->currentMessage()));
        auto* note = w.attention()->findChild<QLabel*>("attentionError");
        QVERIFY(note && note->isVisible());
        QVERIFY(note->text().contains("config.json"));
        const QRect inWindow(note->mapTo(&w, QPoint(0, 0)), note->size());
        QVERIFY2(w.rect().contains(inWindow.center()) && !note->visibleRegion().isEmpty(), "the error is on screen");
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            w.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/bad_model_1280.png");
    }

    void biasViewMeasuresCancelsAndExports()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1280, 720);
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        auto* tabs = w.attention()->findChild<QTabWidget*>("attentionViews");
        auto* bias = w.attention()->findChild<ropescope::gui::BiasView*>("biasView");
        QVERIFY(tabs && bias);
        tabs->setCurrentWidget(bias);
        QSignalSpy done(bias, &ropescope::gui::BiasView::finished);

        // Cancel: a long run stops between samples, says so, and keeps nothing.
        bias->setSamples(100000);
        bias->start();
        QVERIFY(bias->busy());
        QTRY_VERIFY_WITH_TIMEOUT(bias->findChild<QProgressBar*>("biasProgress")->value() > 0, 60000);
        bias->cancel();
        QVERIFY(done.wait(60000));
        QCOMPARE(bias->error(), QString("Cancelled."));
        QVERIFY(!bias->result());

        // A real measurement: 12 samples, the model's own scheme and vrope, every layer.
        bias->setSamples(12);
        bias->setSchemes("vrope");
        bias->start();
        QVERIFY(done.wait(60000));
        QVERIFY2(bias->error().isEmpty(), qPrintable(bias->error()));
        QVERIFY(bias->result());
        QCOMPARE(bias->result()->sampleCount(), 12);
        QCOMPARE(bias->result()->schemes.size(), 2);
        QCOMPARE(bias->findChild<QTableWidget*>("biasTable")->rowCount(), 2 * 4);
        QVERIFY(bias->findChild<ropescope::views::ChartView*>("biasFigure")->chartPainter());
        w.grab().save(dir.filePath("bias_1280.png"));
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            w.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/bias_1280.png");
        bias->exportTo(dir.filePath("export"));
        for (const char* name : {"bias.png", "bias.svg", "bias.pdf", "bias.csv", "bias.json", "bias_state.json"})
            QVERIFY2(QFileInfo(QDir(dir.filePath("export")).filePath(name)).size() > 100, name);

        // A scheme name that does not exist is said at once.
        bias->setSchemes("vrope,nosuch");
        bias->start();
        QVERIFY(!bias->busy());
        QVERIFY2(bias->error().contains("unknown scheme 'nosuch'"), qPrintable(bias->error()));

        // The user's own samples: a question set (3 lines, images beside it) and a folder of two videos.
        const QString data = QString(ROPESCOPE_TEST_DATA) + "/drawn/";
        QDir().mkpath(dir.filePath("own/videos/a"));
        QDir().mkpath(dir.filePath("own/videos/b"));
        QByteArray lines;
        for (int k = 0; k < 3; ++k) {
            const QString name = QString("drawn_%1.png").arg(k, 2, 10, QChar('0'));
            QVERIFY(QFile::copy(data + name, dir.filePath("own/" + name)));
            QVERIFY(QFile::copy(data + name, dir.filePath(QString("own/videos/%1/f%2.png").arg(k < 2 ? "a" : "b").arg(k))));
            lines += "{\"image\": \"" + name.toUtf8() + "\", \"question\": \"what colour is the circle\", \"answer\": \"red\"}\n";
        }
        QVERIFY(QFile::copy(data + "drawn_03.png", dir.filePath("own/videos/b/f3.png")));
        QFile set(dir.filePath("own/questions.jsonl"));
        QVERIFY(set.open(QIODevice::WriteOnly));
        set.write(lines);
        set.close();
        bias->setSchemes("");
        bias->setSource(ropescope::gui::BiasView::Source::QuestionSet, dir.filePath("own/questions.jsonl"));
        bias->start();
        QVERIFY(done.wait(60000));
        QVERIFY2(bias->error().isEmpty(), qPrintable(bias->error()));
        QCOMPARE(bias->result()->sampleCount(), 3);
        QVERIFY(bias->result()->source.startsWith("questions questions.jsonl"));
        QCOMPARE(bias->result()->frames, 0);
        bias->setSource(ropescope::gui::BiasView::Source::VideoFolder, dir.filePath("own/videos"), "where is the square");
        bias->start();
        QVERIFY(done.wait(60000));
        QVERIFY2(bias->error().isEmpty(), qPrintable(bias->error()));
        QCOMPARE(bias->result()->sampleCount(), 2);
        QCOMPARE(bias->result()->frames, 1); // two frames each: one temporal patch
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            w.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/bias_videos_1280.png");
        // A folder without its question, or a missing question set, is said at once in one line.
        bias->setSource(ropescope::gui::BiasView::Source::VideoFolder, dir.filePath("own/videos"), "");
        bias->start();
        QVERIFY(!bias->busy());
        QVERIFY2(bias->error().contains("write the question"), qPrintable(bias->error()));
        bias->setSource(ropescope::gui::BiasView::Source::QuestionSet, dir.filePath("own/none.jsonl"));
        bias->start();
        QVERIFY(!bias->busy());
        QVERIFY2(bias->error().contains("none.jsonl") && !bias->error().contains('\n'), qPrintable(bias->error()));
    }

    // Every Attention view at 1280x720: its export button shows its whole text (screenshots with
    // ROPESCOPE_SCREENSHOTS, one per view).
    void attentionViewsFitAt1280()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.fitTo(QRect(0, 0, 1280, 720)); // as the window opens on a 1280x720 screen
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        w.attention()->selectRegion(1, 1, 3, 3);
        // The side column's fields end inside it (nothing cut at its right edge).
        auto* side = w.attention()->findChild<QScrollArea*>();
        QVERIFY(side);
        for (const char* name : {"question", "head", "mapType", "addImage"}) {
            auto* field = w.attention()->findChild<QWidget*>(name);
            QVERIFY2(field, name);
            const QPoint right = field->mapTo(side->viewport(), QPoint(field->width(), 0));
            QVERIFY2(right.x() <= side->viewport()->width(), name);
        }
        auto* tabs = w.attention()->findChild<QTabWidget*>("attentionViews");
        const char* buttons[] = {"exportMap", "exportLayerHeads", "exportSchemes", "exportRegion"};
        for (int view = 0; view < 4; ++view) {
            tabs->setCurrentIndex(view);
            auto* button = w.attention()->findChild<QPushButton*>(buttons[view]);
            QVERIFY(button);
            QTRY_VERIFY(button->isVisible());
            QVERIFY2(button->width() >= button->sizeHint().width(), buttons[view]);
            if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
                w.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + QString("/attention_view%1_1280.png").arg(view));
        }
        // An answer is marked once its question is edited, and clean again after a run of the new question.
        auto* answer = w.attention()->findChild<QLabel*>("answer");
        auto* question = w.attention()->findChild<QLineEdit*>("question");
        QVERIFY(answer->isEnabled());
        question->setText("what shape is red");
        QVERIFY(!answer->isEnabled());
        QVERIFY2(answer->text().contains("previous question"), qPrintable(answer->text()));
        question->setText(question->text()); // nothing new: still marked
        QVERIFY(!answer->isEnabled());
        QVERIFY(w.attention()->run());
        QVERIFY(answer->isEnabled());
        QVERIFY(!answer->text().contains("previous question"));
        question->setText("what shape is red");
        QVERIFY(answer->isEnabled()); // the same question as the run's
    }

    // The side-by-side list and the selected image region are part of the session too.
    void schemeListAndRegionAreSaved()
    {
        QTemporaryDir dir;
        {
            MainWindow w(dir.path());
            QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
            QVERIFY(firstAttentionRun(w, finished));
            QCOMPARE(w.attention()->comparedSchemes(), 1); // the model's own
            w.panel()->alphaSlider()->setValue(300);
            w.attention()->addExplorerScheme();
            w.attention()->selectRegion(1, 2, 3, 4);
            QCOMPARE(w.attention()->comparedSchemes(), 2);
            w.saveSession(dir.filePath("lists.ropescope.json"));
        }
        MainWindow restored(dir.path());
        QSignalSpy finished(restored.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(restored, finished));
        QCOMPARE(restored.attention()->comparedSchemes(), 2);
        const QJsonArray schemes = restored.attention()->settings()["schemes"].toArray();
        QCOMPARE(schemes.size(), 2);
        QCOMPARE(schemes[1].toObject()["label"].toString(), QString("circle alpha 0.3"));
        QCOMPARE(schemes[1].toObject()["scheme"].toObject()["alpha"].toDouble(), 0.3);
        QCOMPARE(restored.attention()->settings()["region"].toString(), QString("1,2,3,4"));
        QCOMPARE(static_cast<int>(restored.attention()->regionShares().size()), restored.attention()->mapTokenCount());
    }

    void explorerExplainsItself()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        // Errors in the window's words, not command-line flags.
        ropescope::session::ExplorerState s = w.state();
        s.age = "CMX";
        QVERIFY(!w.applyState(s));
        QVERIFY2(w.lastError().startsWith("AGE schedule:"), qPrintable(w.lastError()));
        // The alpha box and the slider are one value.
        auto* alphaBox = w.panel()->findChild<QDoubleSpinBox*>("alphaValue");
        alphaBox->setValue(0.25);
        QCOMPARE(w.panel()->alphaSlider()->value(), 250);
        QCOMPARE(w.state().params.circle.alpha, 0.25);
        w.panel()->alphaSlider()->setValue(700);
        QCOMPARE(alphaBox->value(), 0.7);
        // The auto radius modes say what R came out: paper auto-k on an 8x8 grid, k 1: hypot(3.5, 3.5).
        s = w.state();
        s.params.circle.radiusMode = ropescope::geometry::RadiusMode::AutoPaper;
        s.params.circle.radius = 1.0;
        QVERIFY(w.applyState(s));
        QCOMPARE(w.panel()->findChild<QLabel*>("effectiveRadius")->text(), QString("R = 4.95"));
        QVERIFY(!w.panel()->findChild<QLabel*>("legend")->text().isEmpty());
        // A token picked in the view is selected in the table.
        w.selectToken(2);
        auto* table = w.findChild<QTableView*>("positionTable");
        const QModelIndexList rows = table->selectionModel()->selectedRows();
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows.first().data().toInt(), 2);
    }

    void cameraRefitsAfterChangesBehindTheAttentionTab()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1200, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.showAttentionTab();
        QVERIFY(QTest::qWaitFor([&] { return !w.attention()->busy(); }, 60000));
        w.resize(1600, 1000); // the hidden view keeps its old size until it is shown again
        ropescope::session::ExplorerState s = w.state();
        s.params.kind = ropescope::geometry::SchemeKind::Hard; // a much longer text axis
        s.layout = "text:40,image:8x8,text:40";
        QVERIFY(w.applyState(s));
        w.findChild<QTabWidget*>()->setCurrentIndex(0);
        QApplication::processEvents();
        vtkCamera* camera = w.view()->renderer()->GetActiveCamera();
        double shown[3];
        camera->GetPosition(shown);
        w.setCameraPreset(ropescope::views::CameraPreset::Isometric); // a fit made while the view is visible
        double fitted[3];
        camera->GetPosition(fitted);
        // Equal up to the labels that declutter shows or hides (they count in the fitted bounds).
        const double distance = camera->GetDistance();
        for (int i = 0; i < 3; ++i)
            QVERIFY2(std::abs(shown[i] - fitted[i]) < 0.01 * distance, qPrintable(QString("%1: %2 vs %3").arg(i).arg(shown[i]).arg(fitted[i])));
    }

    void panelEditsKeepTheWindowsOwnFields()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1200, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        // Until the user turns the camera it is the preset's, refitted on resize: start-up renders are not a
        // camera of the user's.
        QTest::qWait(600);
        QVERIFY(!w.state().cameraState);
        // The user turns the camera with the mouse; a slider moved afterwards must not put it back.
        const ropescope::session::CameraState preset = w.scene().cameraState();
        auto* view = w.view();
        const QPoint centre = view->rect().center();
        QTest::mousePress(view, Qt::LeftButton, {}, centre);
        for (int step = 1; step <= 5; ++step)
            QTest::mouseMove(view, centre + QPoint(20 * step, 8 * step));
        QTest::mouseRelease(view, Qt::LeftButton, {}, centre + QPoint(100, 40));
        const ropescope::session::CameraState turned = w.scene().cameraState();
        QVERIFY(turned.position != preset.position);
        QTRY_VERIFY_WITH_TIMEOUT(w.state().cameraState.has_value(), 5000);
        QCOMPARE(w.state().cameraState->position, turned.position);
        w.selectToken(1);
        w.panel()->alphaSlider()->setValue(300);
        QCOMPARE(w.state().params.circle.alpha, 0.3);
        QVERIFY(w.state().cameraState);
        QCOMPARE(w.state().cameraState->position, turned.position);
        QCOMPARE(w.scene().cameraState().position, turned.position);
        QCOMPARE(w.state().selectedToken, 1);

        // A layout typed as text shows in the structured editor too (it is not echoed back any more).
        QLineEdit* layout = w.panel()->layoutEdit();
        layout->setFocus();
        layout->setText("text:2,image:4x6,text:3");
        QTest::keyClick(layout, Qt::Key_Return);
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:2,image:4x6,text:3"));
        QCOMPARE(w.panel()->findChild<QSpinBox*>("rows")->value(), 4);
        QCOMPARE(w.panel()->findChild<QSpinBox*>("cols")->value(), 6);
        QCOMPARE(w.panel()->findChild<QSpinBox*>("textAfter")->value(), 3);
        // ... and editing the structured editor then starts from it.
        w.panel()->findChild<QSpinBox*>("rows")->setValue(5);
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:2,image:5x6,text:3"));
    }

    void largeRestoredSessionIsNeverReplaced()
    {
        // A restored layout large enough to compute on the worker: the autosave used to be rewritten with the
        // defaults within 3 s, and lost when PTD then failed on its limit (issue "Hostile inputs, second sweep").
        QTemporaryDir dir;
        const QByteArray saved = R"({"layout": "text:70000,image:250x250", "scheme": "mrope"})";
        const QString path = dir.filePath("autosave.ropescope.json");
        auto onDisk = [&] {
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(saved);
        }
        MainWindow w(dir.path());
        QVERIFY(w.readoutsBusy());
        QTest::qWait(1000); // past the autosave's pause
        QCOMPARE(onDisk(), saved);
        QTRY_VERIFY_WITH_TIMEOUT(!w.readoutsBusy(), 120000);
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:70000,image:250x250"));
        QCOMPARE(onDisk(), saved); // restoring is not an edit
        // 70000 x 62500 distances are past PTD's limit: the view is drawn and PTD is left out, with a word.
        QVERIFY2(w.ptdReadout().contains("too many distances"), qPrintable(w.ptdReadout()));
        QVERIFY(QDir(dir.path()).entryList({"autosave.ropescope.json.corrupt-*"}).isEmpty());
        // The user's own edit is saved.
        w.panel()->schemeBox()->setCurrentText("vrope");
        QTRY_VERIFY_WITH_TIMEOUT(!w.readoutsBusy() && onDisk().contains("vrope"), 120000);
        QVERIFY(onDisk().contains("text:70000,image:250x250"));
    }

    void corruptSessionIsSurvived()
    {
        QTemporaryDir dir;
        QFile f(dir.filePath("autosave.ropescope.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"layout\": \"text:4,image:8x8\", \"alpha\": 7, ");
        f.close();
        MainWindow w(dir.path());
        QVERIFY2(w.lastError().contains("not a session file"), qPrintable(w.lastError()));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
        QCOMPARE(QDir(dir.path()).entryList({"autosave.ropescope.json.corrupt-*"}).size(), 1); // kept for the user

        // Well-formed JSON with an impossible value: named, and the current state is kept.
        QFile bad(dir.filePath("bad.json"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write(R"({"layout": "text:2,image:2x2", "scheme": "circle", "alpha": 7})");
        bad.close();
        QVERIFY(!w.openSession(dir.filePath("bad.json")));
        QVERIFY2(w.lastError().contains("alpha"), qPrintable(w.lastError()));
        // A radius no arithmetic survives (it used to draw a blank view) is refused, in the window's words.
        QFile huge(dir.filePath("huge.json"));
        QVERIFY(huge.open(QIODevice::WriteOnly));
        huge.write(R"({"layout": "text:2,image:2x2", "scheme": "circle", "radius": 1e308})");
        huge.close();
        QVERIFY(!w.openSession(dir.filePath("huge.json")));
        QVERIFY2(w.lastError().contains("R or k: R must be above 0 and at most 1e6"), qPrintable(w.lastError()));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
    }

    void attentionTabRunsTheBundledModel()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, w.attention()->exportHeatmaps(dir.filePath("early.png")));
        QVERIFY(!QFile::exists(dir.filePath("early.png")));
        w.showAttentionTab(); // first visit: bundled mrope model on the bundled sample image and question
        QVERIFY(w.attention()->busy()); // the model runs on a worker: the window is back before the answer
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.takeFirst().at(0).toBool(), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->layers(), 4);
        QVERIFY(!w.attention()->answer().isEmpty());
        QCOMPARE(w.attention()->overlay().size(), QSize(224, 224));
        QVERIFY(!w.attention()->status().contains("untrained"));
        const QImage ownScheme = w.attention()->overlay();
        // Blocking runs (scripts) still work and give the same result.
        QVERIFY(w.attention()->run());
        QCOMPARE(w.attention()->overlay(), ownScheme);
        finished.clear();

        // Switching to the explorer's scheme (Circle-RoPE) re-runs by itself; five alpha tweaks during
        // that run collapse into one rerun with the newest alpha.
        w.attention()->useExplorerScheme(true);
        QVERIFY(w.attention()->busy());
        for (int alpha : {300, 400, 600, 700, 800})
            w.panel()->alphaSlider()->setValue(alpha);
        QTRY_VERIFY_WITH_TIMEOUT(!w.attention()->busy(), 60000);
        QCOMPARE(finished.count(), 2);
        QVERIFY2(w.attention()->status().contains("scheme circle"), qPrintable(w.attention()->status()));
        QVERIFY2(w.attention()->status().contains("untrained scheme"), qPrintable(w.attention()->status()));
        QVERIFY(w.attention()->overlay() != ownScheme); // other positions, other attention
        QVERIFY(w.attention()->ownOverlay().isNull());
        // A change the model does not see (the colour mode) runs nothing.
        w.panel()->findChild<QComboBox*>("colour")->setCurrentIndex(1);
        QVERIFY(!w.attention()->busy());

        // Compare: the model's own scheme beside the explorer's, and where attention moved.
        finished.clear();
        w.attention()->compareWithOwnScheme(true);
        QVERIFY(w.attention()->busy());
        QVERIFY(finished.wait(60000));
        QCOMPARE(w.attention()->ownOverlay(), ownScheme); // exactly the first run's map
        QCOMPARE(w.attention()->differenceOverlay().size(), QSize(224, 224));
        QVERIFY2(w.attention()->shift() > 0.01 && w.attention()->shift() <= 1, qPrintable(QString::number(w.attention()->shift())));
        QVERIFY(w.attention()->findChild<QLabel*>("shift")->text().contains("attention moved by"));
        // A question token's map is compared too (its row of both runs); an answer token's cannot be (the own
        // scheme's run is a prefill).
        const double meanShift = w.attention()->shift();
        w.attention()->selectToken(1);
        QVERIFY(!w.attention()->ownOverlay().isNull());
        QVERIFY2(w.attention()->findChild<QLabel*>("shift")->text().contains("'shape'"), qPrintable(w.attention()->findChild<QLabel*>("shift")->text()));
        QVERIFY(w.attention()->shift() != meanShift);
        w.attention()->selectToken(w.attention()->mapTokenCount() - 1);
        QVERIFY(w.attention()->ownOverlay().isNull());
        w.attention()->selectToken(-1);
        // Export for a paper: the three figures, each carrying the run's parameters.
        const QStringList written = w.attention()->exportHeatmaps(dir.filePath("fig/attention.png"));
        QCOMPARE(written, (QStringList{dir.filePath("fig/attention.png"), dir.filePath("fig/attention_own.png"),
                                       dir.filePath("fig/attention_difference.png")}));
        const QImage exported(written[0]);
        // The map on top (centred), its colour bar and caption under it.
        const QImage overlay = w.attention()->overlay().convertToFormat(QImage::Format_RGB888);
        QVERIFY(exported.height() > overlay.height() + 40);
        QCOMPARE(exported.convertToFormat(QImage::Format_RGB888).copy((exported.width() - overlay.width()) / 2, 0, overlay.width(), overlay.height()),
                 overlay);
        const QJsonObject meta = QJsonDocument::fromJson(exported.text("ropescope").toUtf8()).object();
        QCOMPARE(meta["question"].toString(), QString("what shape is yellow"));
        QCOMPARE(meta["images"].toArray().size(), 1); // every image of the prompt is recorded
        QCOMPARE(meta["answer"].toString(), w.attention()->answer());
        const QJsonObject diffMeta = QJsonDocument::fromJson(QImage(written[2]).text("ropescope").toUtf8()).object();
        QCOMPARE(diffMeta["shift"].toDouble(), w.attention()->shift());
        // Back to the model's own scheme: nothing to compare.
        finished.clear();
        w.attention()->useExplorerScheme(false);
        QVERIFY(finished.wait(60000));
        QVERIFY(w.attention()->ownOverlay().isNull());
        QCOMPARE(w.attention()->overlay(), ownScheme);
    }

    // Image region -> text: a drag on the picture selects cells, the chart gives each token's share per
    // layer and head, the region is saved, and "Show in 3-D" puts the prompt in the explorer with the
    // attending tokens and the region's image tokens highlighted.
    void regionToTextSelectsChartsAndShowsIn3d()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        ropescope::gui::AttentionPanel* a = w.attention();
        QVERIFY(a->regionShares().empty());
        auto* views = a->findChild<QTabWidget*>("attentionViews");
        views->setCurrentIndex(3);
        auto* chart = a->findChild<ropescope::views::ChartView*>("regionView");
        QVERIFY(chart->isVisible());
        // Drag from the picture's top-left cell three cells right and two down.
        const QRectF picture = ropescope::views::regionPictureRect(QRectF(chart->rect()), QSize(224, 224));
        const double cell = picture.width() / 8;
        const QPoint from = (picture.topLeft() + QPointF(cell / 2, cell / 2)).toPoint();
        const QPoint to = (picture.topLeft() + QPointF(3.5 * cell, 2.5 * cell)).toPoint();
        QTest::mousePress(chart, Qt::LeftButton, {}, from);
        QMouseEvent move(QEvent::MouseMove, QPointF(to), chart->mapToGlobal(QPointF(to)), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(chart, &move);
        QTest::mouseRelease(chart, Qt::LeftButton, {}, to);
        QCOMPARE(a->settings()["region"].toString(), QString("0,0,2,3"));
        const std::vector<double> last = a->regionShares();
        QCOMPARE(static_cast<int>(last.size()), a->mapTokenCount()); // question tokens and the answer
        for (double s : last)
            QVERIFY(s >= 0 && s <= 1);
        a->findChild<QSlider*>("attentionLayer")->setValue(0);
        QVERIFY(a->regionShares() != last); // per layer
        a->findChild<QComboBox*>("head")->setCurrentIndex(2);
        const std::vector<double> head0 = a->regionShares();
        a->findChild<QComboBox*>("head")->setCurrentIndex(3);
        QVERIFY(a->regionShares() != head0); // per head

        QSignalSpy shown(a, &ropescope::gui::AttentionPanel::showInExplorer);
        a->findChild<QPushButton*>("showRegionIn3d")->click();
        QCOMPARE(shown.count(), 1);
        const ropescope::session::ExplorerState& s = w.state();
        QVERIFY2(s.layout.find("image:8x8") != std::string::npos, s.layout.c_str());
        QCOMPARE(s.layer, 0);
        QCOMPARE(static_cast<int>(s.highlighted.size()), 3 + 12); // three question tokens, the 3x4 region's image tokens
        QCOMPARE(s.highlighted.front(), s.selectedToken);
        const ropescope::geometry::PositionTable table = s.buildTable();
        for (size_t k = 3; k < s.highlighted.size(); ++k)
            QVERIFY(std::find(table.textTokens.begin(), table.textTokens.end(), s.highlighted[k]) == table.textTokens.end()); // image tokens
        // A layout typed in the panel afterwards drops the marks of the old one.
        ropescope::session::ExplorerState other = w.state();
        other.layout = "text:4,image:4x4,text:2";
        QVERIFY(w.applyState(other));
        QVERIFY(w.state().highlighted.empty());

        // A second image: one map per image side by side, each image's share beside them, regions on either.
        QVERIFY(a->addImage(QString(ROPESCOPE_TEST_DATA) + "/drawn/drawn_00.png"));
        QCOMPARE(a->imageCount(), 2);
        QVERIFY(a->run());
        QCOMPARE(a->overlay().size(), QSize(224 + ropescope::views::kPictureGap + 224, 224));
        auto* shares = a->findChild<QLabel*>("imageShares");
        QVERIFY(!shares->isHidden()); // on the Map tab, behind the Region tab here
        const QRegularExpressionMatch m = QRegularExpression("image 1: ([0-9.]+)%, image 2: ([0-9.]+)%").match(shares->text());
        QVERIFY2(m.hasMatch(), qPrintable(shares->text()));
        QVERIFY(std::abs(m.captured(1).toDouble() + m.captured(2).toDouble() - 100) < 0.15);
        QCOMPARE(a->settings()["region"].toString(), QString("0,0,2,3")); // image 1's cells are still there
        // Drag on the second picture: its bottom-right cell.
        const QRectF strip = ropescope::views::regionPictureRect(QRectF(chart->rect()), QSize(224 + ropescope::views::kPictureGap + 224, 224));
        const double scale = strip.width() / (448 + ropescope::views::kPictureGap);
        const QPoint second = (strip.topLeft() + QPointF((224 + ropescope::views::kPictureGap + 220) * scale, 220 * scale)).toPoint();
        QTest::mousePress(chart, Qt::LeftButton, {}, second);
        QTest::mouseRelease(chart, Qt::LeftButton, {}, second);
        QCOMPARE(a->settings()["region"].toString(), QString("2:7,7,7,7"));
        QCOMPARE(a->settings()["more_images"].toArray().size(), 1);
        a->clearRegion();
        // A session brings both images back; a single image drops the second.
        const QJsonObject saved = a->settings();
        QVERIFY(a->setImage(ropescope::io::sampleImage()));
        QCOMPARE(a->imageCount(), 1);
        a->applySettings(saved);
        QCOMPARE(a->imageCount(), 2);
    }

    void attentionViewsOfTheSecondLevel()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        finished.clear();
        ropescope::gui::AttentionPanel* a = w.attention();

        // Per-token maps, picked by clicking the token: "what shape is yellow" -> the answer. The answer's map
        // is that of the query that produced it, the question's last token.
        QCOMPARE(a->mapTokenCount(), 5);
        const QImage mean = a->overlay();
        auto* tokens = a->findChild<QLabel*>("mapTokens");
        QVERIFY(tokens->text().contains("yellow"));
        Q_EMIT tokens->linkActivated("3");
        const QImage yellow = a->overlay();
        QVERIFY(yellow != mean);
        Q_EMIT tokens->linkActivated("4");
        QCOMPARE(a->overlay(), yellow);
        Q_EMIT tokens->linkActivated("0");
        QVERIFY(a->overlay() != yellow);
        Q_EMIT tokens->linkActivated("all");
        QCOMPARE(a->overlay(), mean);

        // The model's own positional prior of the selected token, beside its correlation with the attention.
        Q_EMIT tokens->linkActivated("3");
        auto* head = a->findChild<QComboBox*>("head");
        head->setCurrentIndex(3); // head 1
        const QImage attention = a->overlay();
        a->showOwnPrior(true);
        const QImage prior = a->overlay();
        QVERIFY(prior != attention);
        const double r1 = a->priorCorrelation();
        QVERIFY(r1 >= -1 && r1 <= 1 && r1 != 0);
        const QString fit = a->findChild<QLabel*>("priorFit")->text();
        QVERIFY2(fit.contains("yellow") && fit.contains(QString("r = %1").arg(r1, 0, 'f', 3)), qPrintable(fit));
        head->setCurrentIndex(4); // head 2: its own prior and fit
        QVERIFY(a->overlay() != prior && a->priorCorrelation() != r1);
        head->setCurrentIndex(3);
        QCOMPARE(a->overlay(), prior);
        QCOMPARE(a->settings()["map_type"].toString(), QString("own_prior"));
        a->showOwnPrior(false);
        QCOMPARE(a->overlay(), attention);
        QVERIFY(a->findChild<QLabel*>("priorFit")->text().isEmpty());
        Q_EMIT tokens->linkActivated("all");
        head->setCurrentIndex(0);
        QCOMPARE(a->overlay(), mean);

        // Gradient relevancy: the backward pass runs on the worker, then the map shows it; saved as a map type.
        finished.clear();
        a->findChild<QComboBox*>("mapType")->setCurrentIndex(2);
        QVERIFY(a->busy());
        QVERIFY(finished.wait(60000));
        const QImage relevancy = a->overlay();
        QVERIFY(relevancy != mean);
        const QString relevancyText = a->findChild<QLabel*>("priorFit")->text();
        QVERIFY2(relevancyText.contains("relevancy of 'diamond'"), qPrintable(relevancyText));
        QCOMPARE(a->settings()["map_type"].toString(), QString("relevancy"));
        a->findChild<QSlider*>("attentionLayer")->setValue(1);
        QCOMPARE(a->overlay(), relevancy); // one map for the answer, whatever layer
        a->findChild<QSlider*>("attentionLayer")->setValue(3);
        a->findChild<QComboBox*>("mapType")->setCurrentIndex(0);
        QCOMPARE(a->overlay(), mean);

        // Layers x heads: a click on a cell opens that layer and head in the Map tab.
        auto* tabs = a->findChild<QTabWidget*>("attentionViews");
        tabs->setCurrentIndex(1);
        auto* grid = a->findChild<ropescope::views::ChartView*>("layerHeads");
        QTRY_VERIFY(grid->isVisible());
        ropescope::views::LayerHeadGrid shape;
        shape.layers = {0, 1, 2, 3};
        shape.heads = a->findChild<QComboBox*>("head")->count() - 2;
        QPoint target(-1, -1);
        for (int y = 0; y < grid->height() && target.x() < 0; y += 2)
            for (int x = 0; x < grid->width(); x += 2)
                if (ropescope::views::layerHeadAt(QRectF(grid->rect()), shape, QPointF(x, y)) == std::pair{2, 1}) {
                    target = QPoint(x + 3, y + 3);
                    break;
                }
        QVERIFY(target.x() >= 0);
        QTest::mouseClick(grid, Qt::LeftButton, {}, target);
        QCOMPARE(a->findChild<QSlider*>("attentionLayer")->value(), 2);
        QCOMPARE(a->findChild<QComboBox*>("head")->currentText(), QString("1"));
        QCOMPARE(tabs->currentIndex(), 0);

        // Schemes side by side: the model's own (listed from the start) and two Circle-RoPE alphas from the
        // explorer, compared on a worker.
        QCOMPARE(a->comparedSchemes(), 1);
        a->addExplorerScheme();
        w.panel()->alphaSlider()->setValue(200);
        a->addExplorerScheme();
        QCOMPARE(a->comparedSchemes(), 3);
        finished.clear();
        a->requestCompare();
        QVERIFY(a->busy());
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.takeFirst().at(0).toBool(), qPrintable(a->status()));
        QVERIFY2(a->status().contains("compared 3 of 3 schemes"), qPrintable(a->status()));
        QVERIFY(a->findChild<ropescope::views::ChartView*>("schemesView")->chartPainter() != nullptr);
        // The own scheme is the reference; each Circle-RoPE alpha moves the map away from it, by different amounts.
        const std::vector<double> shifts = a->comparedShifts();
        QCOMPARE(shifts.size(), size_t(3));
        QCOMPARE(shifts[0], 0.0);
        QVERIFY(shifts[1] > 0.01 && shifts[2] > 0.01 && shifts[1] != shifts[2]);

        // Every view exports the figure the CLI writes for it, at its natural size, with the run recorded.
        QTemporaryDir out;
        auto* schemesPage = a->findChild<ropescope::gui::SchemesPage*>();
        auto* layersPage = a->findChild<ropescope::gui::LayerHeadsPage*>();
        auto* regionPage = a->findChild<ropescope::gui::RegionPage*>();
        QVERIFY(schemesPage && layersPage && regionPage);
        ropescope::gui::writeFigure(out.filePath("schemes.png"), schemesPage->figure(), schemesPage->figureSize(), a->runMetadata());
        const QImage schemesFigure(out.filePath("schemes.png"));
        QCOMPARE(schemesFigure.size(), schemesPage->figureSize());
        QVERIFY(schemesFigure.width() > 3 * 120); // three maps side by side
        QVERIFY(schemesFigure.text("ropescope").contains("what shape is yellow"));
        ropescope::gui::writeFigure(out.filePath("layers.png"), layersPage->figure(), layersPage->figureSize(), a->runMetadata());
        QCOMPARE(QImage(out.filePath("layers.png")).size(), layersPage->figureSize());
        a->selectRegion(2, 2, 4, 5);
        ropescope::gui::writeFigure(out.filePath("region.svg"), regionPage->figure(), regionPage->figureSize(), a->runMetadata());
        QFile region(out.filePath("region.svg"));
        QVERIFY(region.open(QIODevice::ReadOnly));
        QVERIFY(region.readAll().contains("which tokens attend rows 2-4, columns 2-5"));
        a->exportTokenSheet(out.filePath("tokens.pdf"));
        QVERIFY(QFileInfo(out.filePath("tokens.pdf")).size() > 2000);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, a->exportTokenSheet(out.filePath("tokens.txt"))); // not a figure format
        QVERIFY(!QFile::exists(out.filePath("tokens.txt")));
    }

    void modelsLoadInTheBackground()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        const QString answer = w.attention()->answer();

        // Another bundled model: loaded on a worker, then run under its own scheme.
        finished.clear();
        w.attention()->openModel(QFileInfo(ropescope::io::bundledModel()).dir().filePath("circle"));
        QVERIFY(w.attention()->busy());
        QTRY_VERIFY_WITH_TIMEOUT(!w.attention()->busy(), 60000);
        QCOMPARE(finished.count(), 1);
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->findChild<QLabel*>("modelName")->text(), QString("circle (trained with circle)"));
        QVERIFY2(w.attention()->status().startsWith("scheme circle"), qPrintable(w.attention()->status()));
        QVERIFY(!w.attention()->status().contains("untrained"));
        QCOMPARE(w.attention()->answer(), answer); // both models answer the sample

        // A folder that is not a model: one clear line, and the circle model stays in use.
        finished.clear();
        QTemporaryDir empty;
        w.attention()->openModel(empty.path());
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), false);
        QVERIFY2(w.attention()->status().contains("config.json"), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->findChild<QLabel*>("modelName")->text(), QString("circle (trained with circle)"));
        QVERIFY(w.attention()->run());
        QVERIFY(w.attention()->status().startsWith("scheme circle"));
    }

    // A Qwen3-VL folder (the tiny fixture's weights and a small tokenizer) runs in the Attention tab: its
    // interleaved allocation and DeepStack layers are named, and the map has its 32-pixel-cell grid.
    void attentionTabRunsQwen3Vl()
    {
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder("qwen3vl-tiny", model.path()));
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        const QString status = w.attention()->status();
        QVERIFY2(status.contains("allocation interleaved-mrope[6,5,5]") && status.contains("DeepStack after layers 0-1"), qPrintable(status));
        QVERIFY(!w.attention()->overlay().isNull());
        QVERIFY(!w.attention()->findChild<QLabel*>("modelInputs")->isVisible()); // not a shapes-task model
    }

    // Qwen3.5's hybrid decoder: the layer slider steps through its attention layers (3 and 7), labelled with
    // the model's numbers; the status says what the DeltaNet layers are; sessions keep the model's number.
    void attentionTabRunsQwen35()
    {
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder("qwen35-tiny", model.path()));
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        const QString status = w.attention()->status();
        QVERIFY2(status.contains("6 of 8 layers are Gated DeltaNet") && status.contains("attention layers 3, 7")
                     && status.contains("rotate 8 of 32 dims"), qPrintable(status));
        QCOMPARE(w.attention()->layers(), 2);
        auto* slider = w.attention()->findChild<QSlider*>("attentionLayer");
        auto* number = w.attention()->findChild<QLabel*>("attentionLayerNumber");
        QCOMPARE(slider->maximum(), 1);
        QCOMPARE(number->text(), QString("7"));
        const QImage last = w.attention()->overlay();
        w.attention()->openLayerHead(3, 1); // a click in the layers x heads grid names the model's layer
        QCOMPARE(slider->value(), 0);
        QCOMPARE(number->text(), QString("3"));
        QVERIFY(w.attention()->overlay() != last);
        QCOMPARE(w.attention()->settings()["layer"].toInt(), 3);
        // Schemes side by side compare at the shown attention layer.
        w.attention()->addExplorerScheme();
        w.attention()->requestCompare();
        QTRY_VERIFY_WITH_TIMEOUT(!w.attention()->busy(), 60000);
        QVERIFY2(w.attention()->status().contains("compared 2 of 2 schemes at layer 3"), qPrintable(w.attention()->status()));
        if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
            w.grab().save(shots + "/attention_qwen35.png");
    }

    // Before a run the tab says what a bundled model understands and which typed words it cannot read.
    void attentionTabSaysWhatTheModelReads()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY(firstAttentionRun(w, finished));
        const auto* inputs = w.attention()->findChild<QLabel*>("modelInputs");
        const auto* note = w.attention()->findChild<QLabel*>("questionNote");
        QVERIFY(inputs->isVisible());
        QVERIFY2(inputs->text().contains("circle, square, triangle, diamond in red, green, blue, yellow, purple"), qPrintable(inputs->text()));
        QVERIFY2(inputs->text().contains("objects 10-32 px across"), qPrintable(inputs->text())); // what a drawing of their own must keep to
        QVERIFY(!note->isVisible());
        auto* question = w.attention()->findChild<QLineEdit*>("question");
        question->setText("what colour is the big circle?");
        QVERIFY(note->isVisible());
        QVERIFY2(note->text().contains("does not know the words 'big', 'circle?'"), qPrintable(note->text()));
        question->setText("what colour is the circle");
        QVERIFY(!note->isVisible());
    }

    void badLayoutKeepsTheLastGoodView()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        QLineEdit* layout = w.panel()->layoutEdit();
        auto paste = [&](const QString& text) { // one user edit: select all, paste
            QApplication::clipboard()->setText(text);
            QTest::keySequence(layout, QKeySequence::SelectAll);
            QTest::keySequence(layout, QKeySequence::Paste);
        };
        const QByteArray autosaved = [&] {
            QFile f(w.autosavePath());
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();
        paste("text:2,imag:3x3");
        QTest::keyClick(layout, Qt::Key_Return); // Enter applies at once
        QVERIFY2(w.lastError().contains("unknown kind 'imag'"), qPrintable(w.lastError()));
        QVERIFY2(w.lastError().contains("showing the last valid layout, text:4,image:8x8,text:6"), qPrintable(w.lastError()));
        QVERIFY(w.statusBar()->currentMessage().contains("unknown kind 'imag'"));
        QCOMPARE(w.scene().world().rows(), Eigen::Index(74));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
        QCOMPARE([&] { QFile f(w.autosavePath()); f.open(QIODevice::ReadOnly); return f.readAll(); }(), autosaved); // never saved
        // Moving a slider meanwhile applies the last valid layout, not the text in the field.
        w.panel()->alphaSlider()->setValue(300);
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
        paste("text:2,image:3x3,text:1");
        QTest::keyClick(layout, Qt::Key_Return);
        QVERIFY(w.lastError().isEmpty());
        // Fixed: the error leaves the panel and the status bar too (it used to stay there for 10 s).
        QVERIFY(w.panel()->findChild<QLabel*>("error")->text().isEmpty());
        QVERIFY2(w.statusBar()->currentMessage().isEmpty(), qPrintable(w.statusBar()->currentMessage()));
        QCOMPARE(w.scene().world().rows(), Eigen::Index(12));
        // Typing applies nothing per keystroke: "text:" and "text:1" are not drawn on the way to "text:15".
        layout->clear();
        QTest::keyClicks(layout, "text:15");
        QCOMPARE(w.scene().world().rows(), Eigen::Index(12));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:2,image:3x3,text:1"));
        QTRY_COMPARE_WITH_TIMEOUT(w.scene().world().rows(), Eigen::Index(15), 3000); // after a pause
        QVERIFY(w.lastError().isEmpty());
    }

    void windowFitsALaptopScreen()
    {
        // Every panel open, an AGE schedule's long layer label, the attention comparison row: the window
        // still fits 1280x720 (no widget's minimum width exceeds the screen).
        QTemporaryDir dir;
        MainWindow w(dir.path());
        ropescope::session::ExplorerState s = w.state();
        s.age = "strategy_4";
        s.layer = 7;
        QVERIFY(w.applyState(s));
        w.attention()->useExplorerScheme(true);
        w.attention()->compareWithOwnScheme(true);
        w.showAttentionTab();
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTRY_VERIFY_WITH_TIMEOUT(!w.attention()->busy(), 60000);
        const QSize minimum = w.minimumSizeHint().expandedTo(w.minimumSize());
        // The parameters fit their dock at the width the window gives it on a laptop screen.
        QVERIFY2(w.panel()->minimumSizeHint().width() <= 320, qPrintable(QString::number(w.panel()->minimumSizeHint().width())));
        QVERIFY2(minimum.width() <= 1280 && minimum.height() <= 720, qPrintable(QString("%1x%2").arg(minimum.width()).arg(minimum.height())));
        for (QWidget* child : w.findChildren<QWidget*>())
            if (child->isVisible())
                QVERIFY2(child->minimumSizeHint().width() <= 1280 && child->minimumWidth() <= 1280, qPrintable(child->objectName()));
        // The side panels are docks that the View menu hides and shows.
        auto* parameters = w.findChild<QDockWidget*>("parametersDock");
        QVERIFY(parameters && parameters->isVisible());
        parameters->toggleViewAction()->trigger();
        QVERIFY(!parameters->isVisible());
        parameters->toggleViewAction()->trigger();
        QVERIFY(parameters->isVisible());
    }

    void largeLayoutsComputeInTheBackground()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        ropescope::session::ExplorerState s = w.state();
        s.layout = "text:4,image:400x400,text:6"; // 160,010 tokens: over the background threshold
        QVERIFY(w.applyState(s));
        QVERIFY(w.readoutsBusy()); // the window is back at once; the old view stays until the new one is ready
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:8x8,text:6"));
        // Requests during the run collapse into the newest: the first large layout is never shown.
        s.layout = "text:4,image:300x400,text:6";
        QVERIFY(w.applyState(s));
        QTRY_VERIFY_WITH_TIMEOUT(!w.readoutsBusy(), 60000);
        QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:4,image:300x400,text:6"));
        QCOMPARE(w.readouts().table.size(), 120010);
        QCOMPARE(w.scene().world().rows(), Eigen::Index(120010));
        // A small state asked for while a large one computes wins over it.
        s.layout = "text:4,image:400x400,text:6";
        QVERIFY(w.applyState(s));
        s.layout = "text:2,image:2x2";
        QVERIFY(w.applyState(s));
        QCOMPARE(w.readouts().table.size(), 6);
        QTRY_VERIFY_WITH_TIMEOUT(!w.readoutsBusy(), 60000);
        QCOMPARE(w.readouts().table.size(), 6);
    }
};

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "xcb");
    ropescope::views::VtkViewWidget::setDefaultSurfaceFormat();
    // Settings (recent files, trusted scheme files, dialog folders) in a folder of this run, not the user's.
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    QApplication app(argc, argv);
    TestGui test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_gui.moc"

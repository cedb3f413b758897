// GUI suite (the real window under Xvfb): The explorer window: the scheme and layout panel, schemes from files, the cone view, the readouts, the wheel and shortcuts, exports, large layouts.
#include "tests/gui/gui_test_support.h"

#include "app/gui/message_bar.h"

#include <QLayout>

class TestGuiExplorer : public QObject {
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
            QCOMPARE(w.readouts().table.rotary.rotaryDim(), 32);                                 // of head_dim 128
            QCOMPARE(w.readouts().table.allocation.toString(), std::string("sectioned[4,6,6]")); // 16 pairs
            QVERIFY2(w.selectionReadout() != fullPrior, qPrintable(w.selectionReadout()));       // the prior has fewer pairs
            if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty()) {
                if (auto* scroll =
                        qobject_cast<QScrollArea*>(w.panel()->parentWidget() ? w.panel()->parentWidget()->parentWidget() : nullptr))
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

    // Gemma 4's full layers in the explorer (issue 73): head_dim 512, a quarter rotating, proportional. The frequency view
    // shows every pair of the head, the 192 that never turn grey; sessions keep the setting.
    void proportionalRotaryShowsGemma4sFullLayers()
    {
        QTemporaryDir dir;
        {
            MainWindow w(dir.path());
            w.resize(1280, 720);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            auto* proportional = w.panel()->findChild<QCheckBox*>("proportional");
            QVERIFY(proportional && !proportional->isChecked());
            w.panel()->findChild<QSpinBox*>("headDim")->setValue(512);
            w.panel()->findChild<QDoubleSpinBox*>("partialRotary")->setValue(0.25);
            proportional->setChecked(true);
            QVERIFY(w.state().params.rotary.proportional);
            QVERIFY(w.readouts().table.rotary.proportional);
            const ropescope::views::FrequencyChart chart = ropescope::views::frequencyChart(w.readouts().table);
            QCOMPARE(chart.pairAxis.size(), size_t(256));
            QCOMPARE(std::count(chart.pairAxis.begin(), chart.pairAxis.end(), -1), std::ptrdiff_t(192));
            QVERIFY2(chart.subtitle.contains("pair j turns dims (j, j+256)") && chart.subtitle.contains("pairs 64-255") &&
                         chart.subtitle.contains("never turn"),
                     qPrintable(chart.subtitle));
            w.saveSession(dir.filePath("gemma.ropescope.json"));
        }
        MainWindow restored(dir.filePath("other"));
        QVERIFY(restored.openSession(dir.filePath("gemma.ropescope.json")));
        QVERIFY(restored.state().params.rotary.proportional);
        QVERIFY(restored.panel()->findChild<QCheckBox*>("proportional")->isChecked());
    }

    // Choosing glm-v brings GLM's rotary (theta 1e4, half of each head, adjacent pairs) in one undoable step;
    // what the user set by hand stays when the scheme changes; the frequency view names the pairs' dims.
    void glmVBringsItsOwnRotary()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.resize(1280, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* scheme = w.panel()->findChild<QComboBox*>("scheme");
        auto* fraction = w.panel()->findChild<QDoubleSpinBox*>("partialRotary");
        auto* pairing = w.panel()->findChild<QComboBox*>("pairing");
        auto* theta = w.panel()->findChild<QLineEdit*>("theta");
        QVERIFY(scheme && fraction && pairing && theta);
        scheme->setCurrentText("glm-v");
        QCOMPARE(w.state().params.kind, ropescope::geometry::SchemeKind::GlmV);
        QCOMPARE(w.state().params.rotary.theta, 1e4);
        QCOMPARE(w.state().params.rotary.partial, 0.5);
        QCOMPARE(w.state().params.rotary.pairing, ropescope::geometry::RotaryPairing::Adjacent);
        QCOMPARE(pairing->currentText(), QString("adjacent"));
        QCOMPARE(w.readouts().table.allocation.toString(), std::string("sectioned[8,12,12]"));
        // glm-v reads no Circle-RoPE parameter: alpha's slider and its number box are both off.
        QVERIFY(!w.panel()->findChild<QDoubleSpinBox*>("alphaValue")->isEnabled());
        QCOMPARE(w.panel()->findChild<QLineEdit*>("sections")->placeholderText(), QString("default 8,12,12 (t,h,w)"));
        QVERIFY(ropescope::views::frequencyChart(w.readouts().table).subtitle.contains("pair j turns dims (2j, 2j+1)"));
        // One undo step back to the scheme and rotary before.
        w.undoStack()->undo();
        QCOMPARE(w.state().params.kind, ropescope::geometry::SchemeKind::Circle);
        QCOMPARE(w.state().params.rotary.partial, 1.0);
        QCOMPARE(w.state().params.rotary.pairing, ropescope::geometry::RotaryPairing::Half);
        w.undoStack()->redo();
        QCOMPARE(w.state().params.rotary.pairing, ropescope::geometry::RotaryPairing::Adjacent);
        // A fraction set by hand stays; the untouched theta and pairing go back to Qwen's with mrope.
        fraction->setValue(0.75);
        scheme->setCurrentText("mrope");
        QCOMPARE(w.state().params.rotary.partial, 0.75);
        QCOMPARE(w.state().params.rotary.theta, 1e6);
        QCOMPARE(w.state().params.rotary.pairing, ropescope::geometry::RotaryPairing::Half);
        QVERIFY(ropescope::views::frequencyChart(w.readouts().table).subtitle.contains("pair j turns dims (j, j+48)"));
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
                if (auto* scroll =
                        qobject_cast<QScrollArea*>(w.panel()->parentWidget() ? w.panel()->parentWidget()->parentWidget() : nullptr))
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
        SchemeFiles::setDefaultTrustPrompt([&](const QString&, const QString&, bool) {
            ++asked;
            return true;
        });
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

    // A broken save keeps its error on screen while a slider moves (the last good content runs), and putting
    // the good content back clears it at once (issue 45, item 7).
    void schemeFileErrorLastsUntilTheFileLoads()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("edited.py");
        const QByteArray good = "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) +
            "\nPARAMETERS = {'k': (1.0, 0.0, 10.0)}\n"
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
        const QString file =
            writeFileForGui(dir.filePath("far.py"),
                            "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) +
                                "\nimport near\ndef positions(layout):\n    return [near.SHIFT + i for i in range(layout.tokens)]\n");
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
                                             "# " + QByteArray::number(QDateTime::currentMSecsSinceEpoch()) +
                                                 "\n"
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
        const geometry::PositionTable want =
            geometry::buildPositionTable(geometry::parseLayout("text:3,image:2x3,text:2,video:2x2x2,text:1"), circle);
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
        QVERIFY2(w.lastError().contains("table.csv holds positions for 20 tokens") && w.lastError().contains("has 40"),
                 qPrintable(w.lastError()));
        QVERIFY(w.readouts().table.positions == want.positions);
        // The layout field is marked, as for a layout that does not parse; a fitting layout clears it.
        QVERIFY2(w.panel()->layoutEdit()->styleSheet().contains("#fde7e4"), qPrintable(w.panel()->layoutEdit()->styleSheet()));
        ropescope::session::ExplorerState fitting = w.state();
        fitting.layout = "text:3,image:3x2,text:2,video:2x2x2,text:1";
        QVERIFY2(w.applyState(fitting), qPrintable(w.lastError()));
        QVERIFY(w.panel()->layoutEdit()->styleSheet().isEmpty());
        // A parameter out of range marks its own controls (alpha: the slider and its number box).
        ropescope::session::ExplorerState badAlpha = w.state();
        badAlpha.params = circle;
        badAlpha.params.circle.alpha = 7;
        QVERIFY(!w.applyState(badAlpha));
        QVERIFY(w.panel()->alphaSlider()->styleSheet().contains("#fde7e4"));
        QVERIFY(w.panel()->layoutEdit()->styleSheet().isEmpty());
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
            QWheelEvent event(at, target->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                              false);
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
        QCOMPARE(
            [&] {
                QFile f(w.autosavePath());
                f.open(QIODevice::ReadOnly);
                return f.readAll();
            }(),
            autosaved); // never saved
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

    // Maximising on a large screen (or any resize) shares the new width out: the docks keep their share
    // of the window rather than leaving all of it to the 3-D view.
    void docksKeepTheirShareOfTheWindow()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.fitTo(QRect(0, 0, 1280, 720));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* parameters = w.findChild<QDockWidget*>("parametersDock");
        auto* readouts = w.findChild<QDockWidget*>("readoutsDock");
        QVERIFY(parameters && readouts);
        const double parametersShare = double(parameters->width()) / w.width(), readoutsShare = double(readouts->width()) / w.width();
        w.resize(1920, 1040);
        QTRY_COMPARE(w.width(), 1920);
        QTRY_VERIFY2(std::abs(double(parameters->width()) / w.width() - parametersShare) < 0.02,
                     qPrintable(QString("%1 of %2, was %3").arg(parameters->width()).arg(w.width()).arg(parametersShare)));
        QTRY_VERIFY2(std::abs(double(readouts->width()) / w.width() - readoutsShare) < 0.02,
                     qPrintable(QString("%1 of %2, was %3").arg(readouts->width()).arg(w.width()).arg(readoutsShare)));
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
        QVERIFY2(minimum.width() <= 1280 && minimum.height() <= 720,
                 qPrintable(QString("%1x%2").arg(minimum.width()).arg(minimum.height())));
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

    // A 1000x650 screen: Parameters, the Attention tab and Readouts side by side need more, so the two docks share
    // the left column as tabs; the window fits, and showing the Readouts brings them to the front of that column
    // without widening it.
    void windowFitsASmallScreen()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.fitTo(QRect(0, 0, 1000, 650));
        w.showAttentionTab();
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* parameters = w.findChild<QDockWidget*>("parametersDock");
        auto* readouts = w.findChild<QDockWidget*>("readoutsDock");
        QVERIFY(parameters && readouts);
        QCOMPARE(w.tabifiedDockWidgets(parameters), QList<QDockWidget*>{readouts});
        QVERIFY2(w.minimumSizeHint().width() <= 1000, qPrintable(QString::number(w.minimumSizeHint().width())));
        readouts->toggleViewAction()->trigger(); // hidden
        readouts->toggleViewAction()->trigger(); // shown: in front
        QTabBar* column = nullptr;
        for (QTabBar* bar : w.findChildren<QTabBar*>(QString(), Qt::FindDirectChildrenOnly))
            if (bar->isVisible())
                column = bar;
        QVERIFY(column && column->count() == 2);
        QTRY_COMPARE(column->tabText(column->currentIndex()), QString("Readouts"));
        QVERIFY(readouts->isVisible());
        QVERIFY2(w.minimumSizeHint().width() <= 1000, qPrintable(QString::number(w.minimumSizeHint().width())));
        // A laptop screen keeps them side by side.
        MainWindow laptop(dir.path());
        laptop.fitTo(QRect(0, 0, 1280, 720));
        QVERIFY(laptop.tabifiedDockWidgets(laptop.findChild<QDockWidget*>("parametersDock")).isEmpty());
    }

    // A status message wider than the bar is elided in its middle, the whole of it the bar's tooltip; one that fits
    // is drawn whole, with no tooltip (QStatusBar cut long errors at its edge).
    void longStatusMessagesAreElidedWithTheWholeInATooltip()
    {
        QTemporaryDir dir;
        MainWindow w(dir.path());
        w.fitTo(QRect(0, 0, 1280, 720));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* bar = qobject_cast<ropescope::gui::MessageBar*>(w.statusBar());
        QVERIFY(bar);
        const QString longMessage =
            "/a/model/folder" + QString("/nested").repeated(80) + "/config.json: 'norm_topk_prob' must be true or false";
        bar->showMessage(longMessage, 10000);
        QCOMPARE(bar->currentMessage(), longMessage);
        QVERIFY2(bar->shownMessage().contains(QChar(0x2026)) && bar->shownMessage().endsWith("must be true or false"),
                 qPrintable(bar->shownMessage()));
        QVERIFY(bar->fontMetrics().horizontalAdvance(bar->shownMessage()) < bar->width());
        QTRY_COMPARE(bar->toolTip(), longMessage); // once the bar has laid out its widgets for the message
        QVERIFY(!bar->grab().isNull());            // paints
        bar->showMessage("Exported map.png", 10000);
        QCOMPARE(bar->shownMessage(), QString("Exported map.png"));
        QTRY_VERIFY(bar->toolTip().isEmpty());
        // The window narrowed (its docks hidden, so it can): a message that fitted is elided now.
        QString medium = "a message";
        while (bar->fontMetrics().horizontalAdvance(medium) < 1000)
            medium += " of some words";
        bar->showMessage(medium, 10000);
        QTest::qWait(50);
        QVERIFY(bar->toolTip().isEmpty());
        for (auto* dock : w.findChildren<QDockWidget*>())
            dock->hide();
        w.layout()->activate(); // the window's minimum without the docks
        w.resize(900, 650);
        QTRY_COMPARE(bar->width(), 900);
        QTRY_COMPARE(bar->toolTip(), medium);
        QVERIFY(bar->shownMessage().contains(QChar(0x2026)));
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

ROPESCOPE_GUI_SUITE_MAIN(TestGuiExplorer)
#include "test_gui_explorer.moc"

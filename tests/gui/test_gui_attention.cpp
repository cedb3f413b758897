// GUI suite (the real window under Xvfb): The Attention tab: model runs (the bundled model, Qwen3-VL, Qwen3.5), its views, their settings in the session, model folders that fail.
#include "tests/support/test_paths.h"
#include "tests/gui/gui_test_support.h"

#include <QSet>

static QStringList readLines(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts) : QStringList();
}

class TestGuiAttention : public QObject {
    Q_OBJECT
private Q_SLOTS:
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
        // The model in use stays, and so does its Question field, on screen (issue 45 item 6: it was hidden).
        auto* question = w.attention()->findChild<QWidget*>("question");
        QVERIFY(question && question->isVisible() && !question->visibleRegion().isEmpty());
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            w.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/bad_model_1280.png");
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
        QVERIFY(!tabs->isTabVisible(static_cast<int>(ropescope::gui::AttentionView::Experts))); // a dense model routes nothing
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
        QCOMPARE(schemes[1].toObject()["label"].toString(), QString("circle R 10 alpha 0.3"));
        QCOMPARE(schemes[1].toObject()["scheme"].toObject()["alpha"].toDouble(), 0.3);
        QCOMPARE(restored.attention()->settings()["region"].toString(), QString("1,2,3,4"));
        QCOMPARE(static_cast<int>(restored.attention()->regionShares().size()), restored.attention()->mapTokenCount());
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
            QVERIFY2(std::abs(shown[i] - fitted[i]) < 0.01 * distance,
                     qPrintable(QString("%1: %2 vs %3").arg(i).arg(shown[i]).arg(fitted[i])));
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
        w.showAttentionTab();           // first visit: bundled mrope model on the bundled sample image and question
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
        QVERIFY2(w.attention()->findChild<QLabel*>("shift")->text().contains("'shape'"),
                 qPrintable(w.attention()->findChild<QLabel*>("shift")->text()));
        QVERIFY(w.attention()->shift() != meanShift);
        w.attention()->selectToken(w.attention()->mapTokenCount() - 1);
        QVERIFY(w.attention()->ownOverlay().isNull());
        w.attention()->selectToken(-1);
        // Export for a paper: the three figures, each carrying the run's parameters.
        const QStringList written = w.attention()->exportHeatmaps(dir.filePath("fig/attention.png"));
        QCOMPARE(written,
                 (QStringList{dir.filePath("fig/attention.png"), dir.filePath("fig/attention_own.png"),
                              dir.filePath("fig/attention_difference.png")}));
        const QImage exported(written[0]);
        // The map on top (centred), at least 720 px wide (issue 72 item 6: 252 px in a 360 px file), its colour bar and
        // caption under it.
        QCOMPARE(w.attention()->overlay().width() < 720, true); // the tiny model's map: the export scales it up
        const QImage overlay = w.attention()->overlay().scaledToWidth(720, Qt::SmoothTransformation).convertToFormat(QImage::Format_RGB888);
        QCOMPARE(exported.width(), 720);
        QVERIFY(exported.height() > overlay.height() + 40);
        QCOMPARE(exported.convertToFormat(QImage::Format_RGB888)
                     .copy((exported.width() - overlay.width()) / 2, 0, overlay.width(), overlay.height()),
                 overlay);
        const QJsonObject meta = QJsonDocument::fromJson(exported.text("ropescope").toUtf8()).object();
        QCOMPARE(meta["question"].toString(), QString("what shape is yellow"));
        QCOMPARE(meta["map_size"].toString(), QString("%1x%2").arg(overlay.width()).arg(overlay.height()));
        QCOMPARE(meta["run"].toString(), w.attention()->status()); // the run's own line (issue 72 item 5)
        QCOMPARE(meta["images"].toArray().size(), 1);              // every image of the prompt is recorded
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
            QVERIFY(std::find(table.textTokens.begin(), table.textTokens.end(), s.highlighted[k]) ==
                    table.textTokens.end()); // image tokens
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
        const QRectF strip =
            ropescope::views::regionPictureRect(QRectF(chart->rect()), QSize(224 + ropescope::views::kPictureGap + 224, 224));
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
        // ... and the table `attend` writes beside it: a row per compared scheme, per captured layer and head,
        // per layer and token, whose shares at the shown layer are the region chart's.
        QCOMPARE(ropescope::gui::writeFigureAndTable(out.filePath("schemes.png"), schemesPage->figure(), schemesPage->figureSize(),
                                                     a->runMetadata(), schemesPage->table(), false),
                 out.filePath("schemes.csv"));
        const QStringList schemeRows = readLines(out.filePath("schemes.csv"));
        QCOMPARE(schemeRows.size(), 4);
        QVERIFY(schemeRows[0].startsWith("scheme,answer,ptd,"));
        const QStringList layerRows = QString::fromUtf8(layersPage->table()).split('\n', Qt::SkipEmptyParts);
        QSet<QString> layers, heads, cells;
        for (const QString& line : layerRows.mid(1)) {
            layers << line.section(',', 0, 0);
            heads << line.section(',', 1, 1);
            cells << line.section(',', 0, 1);
            const double mass = line.section(',', 2, 2).toDouble();
            QVERIFY2(mass > 0 && mass <= 1, qPrintable(line));
        }
        QVERIFY(heads.size() > 1 && layers.contains(QString::number(a->runMetadata()["layer"].toInt())));
        QCOMPARE(cells.size(), layerRows.size() - 1); // every layer and head once
        QCOMPARE(cells.size(), layers.size() * heads.size());
        const QByteArray regionTable = regionPage->table();
        QVERIFY(regionTable.startsWith("layer,token,token_text,answer,mass,share\n"));
        const std::vector<double> shownShares = regionPage->shares();
        QVERIFY(!shownShares.empty());
        int matched = 0;
        for (const QString& line : QString::fromUtf8(regionTable).split('\n', Qt::SkipEmptyParts).mid(1))
            if (line.section(',', 0, 0).toInt() == a->runMetadata()["layer"].toInt()) {
                QVERIFY(std::abs(line.section(',', -1).toDouble() - shownShares.at(static_cast<size_t>(matched))) < 1e-6);
                ++matched;
            }
        QCOMPARE(matched, static_cast<int>(shownShares.size()));
        // An existing table of that name is the user's: kept unless they said to replace it.
        QFile mine(out.filePath("region.csv"));
        QVERIFY(mine.open(QIODevice::WriteOnly) && mine.write("mine\n") == 5);
        mine.close();
        QCOMPARE(ropescope::gui::writeFigureAndTable(out.filePath("region.svg"), regionPage->figure(), regionPage->figureSize(),
                                                     a->runMetadata(), regionTable, false),
                 QString());
        QCOMPARE(readLines(out.filePath("region.csv")), QStringList{"mine"});
        QCOMPARE(ropescope::gui::writeFigureAndTable(out.filePath("region.svg"), regionPage->figure(), regionPage->figureSize(),
                                                     a->runMetadata(), regionTable, true),
                 out.filePath("region.csv"));
        QCOMPARE(readLines(out.filePath("region.csv")).size(), regionTable.count('\n'));
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
        w.panel()->alphaSlider()->setValue(300);
        w.attention()->addExplorerScheme(); // a scheme of the user's in the side-by-side list

        // Another bundled model: loaded on a worker, then run under its own scheme.
        finished.clear();
        w.attention()->openModel(QFileInfo(ropescope::io::bundledModel()).dir().filePath("circle"));
        QVERIFY(w.attention()->busy());
        QTRY_VERIFY_WITH_TIMEOUT(!w.attention()->busy(), 60000);
        QCOMPARE(finished.count(), 1);
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->findChild<QLabel*>("modelName")->text(), QString("circle (trained with circle)"));
        // What finished and how long it took come first (issue 56 item 9), then what the run was.
        QVERIFY2(QRegularExpression("^loaded circle in (\\d+ ms|\\d+\\.\\d s), answered in (\\d+ ms|\\d+\\.\\d s)$")
                     .match(w.attention()->status().section('\n', 0, 0))
                     .hasMatch(),
                 qPrintable(w.attention()->status()));
        QVERIFY2(w.attention()->status().section('\n', 1).startsWith("scheme circle"), qPrintable(w.attention()->status()));
        QVERIFY(!w.attention()->status().contains("untrained"));
        QCOMPARE(w.attention()->answer(), answer); // both models answer the sample
        // The list starts from the new model's own scheme and keeps the user's (issue 56 item 12: it was dropped).
        const QJsonArray schemes = w.attention()->settings()["schemes"].toArray();
        QCOMPARE(schemes.size(), 2);
        QCOMPARE(schemes[0].toObject()["label"].toString(), QString("circle (own)"));
        QCOMPARE(schemes[1].toObject()["label"].toString(), QString("circle R 10 alpha 0.3"));

        // A folder that is not a model: one clear line, and the circle model stays in use.
        finished.clear();
        QTemporaryDir empty;
        w.attention()->openModel(empty.path());
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), false);
        // The error has its own line (and the window's status bar); the status line still says the circle model's run
        // (issue 72 item 5: an error replaced it).
        const QString error = w.attention()->findChild<QLabel*>("attentionError")->text().remove(QChar(0x200B));
        QVERIFY2(error.contains("config.json"), qPrintable(error));
        QVERIFY2(w.attention()->status().section('\n', 1).startsWith("scheme circle"), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->findChild<QLabel*>("modelName")->text(), QString("circle (trained with circle)"));
        QVERIFY(w.attention()->run());
        QVERIFY(w.attention()->status().section('\n', 1).startsWith("scheme circle"));
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
        QVERIFY2(status.contains("allocation interleaved-mrope[6,5,5]") && status.contains("DeepStack after layers 0-1"),
                 qPrintable(status));
        QVERIFY(!w.attention()->overlay().isNull());
        QVERIFY(!w.attention()->findChild<QLabel*>("modelInputs")->isVisible()); // not a shapes-task model
    }

    // A GLM-4.1V folder (the tiny fixture's weights, a small tokenizer with GLM's special tokens) runs in the
    // Attention tab under its own scheme (glm-v, as a Hub checkpoint records none) and under the explorer's:
    // half of each head rotates on adjacent pairs, and the status says so.
    void attentionTabRunsGlmV()
    {
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder("glm4v-tiny", model.path()));
        MainWindow w(dir.path());
        w.resize(1280, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        const QString status = w.attention()->status();
        // The long status wraps to as many lines as it needs: none is cut off at the panel's bottom.
        auto* label = w.attention()->findChild<QLabel*>("attentionStatus");
        QTRY_VERIFY(label->isVisible() && label->width() > 0);
        QTRY_VERIFY2(
            label->height() >= label->heightForWidth(label->width()),
            qPrintable(QString("status %1 px high, its text needs %2").arg(label->height()).arg(label->heightForWidth(label->width()))));
        QVERIFY2(status.section('\n', 1).startsWith("scheme glm-v") && status.contains("16 of 32 dims rotate on adjacent pairs") &&
                     status.contains("allocation sectioned[2,3,3]"),
                 qPrintable(status));
        const QImage own = w.attention()->overlay();
        QVERIFY(!own.isNull());
        QCOMPARE(w.attention()->layers(), 2);
        // Under the explorer's scheme: M-RoPE places an image as GLM does (the same map); Circle-RoPE moves it.
        w.attention()->useExplorerScheme(true);
        auto runWith = [&](ropescope::geometry::SchemeKind kind) {
            ropescope::session::ExplorerState s = w.state();
            s.params = ropescope::geometry::defaultSchemeParams(kind);
            return w.applyState(s) && w.attention()->run();
        };
        QVERIFY(runWith(ropescope::geometry::SchemeKind::Mrope));
        QVERIFY2(w.attention()->status().section('\n', 1).startsWith("scheme mrope"), qPrintable(w.attention()->status()));
        QCOMPARE(w.attention()->overlay(), own);
        QVERIFY(runWith(ropescope::geometry::SchemeKind::Circle));
        QVERIFY(w.attention()->overlay() != own);
        QVERIFY(runWith(ropescope::geometry::SchemeKind::GlmV));
        if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
            w.grab().save(shots + "/attention_glm.png");
    }

    // A Gemma 4 folder (the tiny fixture, its word tokenizer) runs in the Attention tab under its own scheme (hard) and the
    // explorer's: the status names the layer kinds and the full layers' rotary; under the map a line names the shown
    // layer's kind and what the mask hid, hatched on the map (the last layer is full: nothing; a sliding one: most of the
    // image, the map changed by the hatching alone where attention is 0); Layers x heads labels its rows.
    void attentionTabRunsGemma4()
    {
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder("gemma4-tiny", model.path()));
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        const QString status = w.attention()->status();
        QVERIFY2(status.section('\n', 1).startsWith("scheme hard") &&
                     status.contains("layers 0-1, 3-4 sliding (window 8), an image's tokens see each other both ways; layers 2, 5 full") &&
                     status.contains("full layers: 8 of 32 dims rotate (proportional): pairs 0-3 at theta^(-2j/32)"),
                 qPrintable(status));
        QCOMPARE(w.attention()->layers(), 6);
        auto* mask = w.attention()->findChild<QLabel*>("attentionMask");
        QVERIFY(mask);
        QCOMPARE(mask->text(), QString("layer 5: full; the mask hides no image token from this map"));
        w.attention()->openLayerHead(4, 0);
        QVERIFY2(mask->text().startsWith("layer 4: sliding (window 8)") && mask->text().contains("hatched: image tokens layer 4's mask"),
                 qPrintable(mask->text()));
        // Under the explorer's M-RoPE: untrained, and its allocation over the full layers' 4 pairs.
        w.attention()->useExplorerScheme(true);
        ropescope::session::ExplorerState s = w.state();
        s.params = ropescope::geometry::defaultSchemeParams(ropescope::geometry::SchemeKind::Mrope);
        QVERIFY(w.applyState(s) && w.attention()->run());
        QVERIFY2(w.attention()->status().section('\n', 1).startsWith("scheme mrope") &&
                     w.attention()->status().contains("(here sectioned[1,1,2]) spreads its axes over those 4 pairs only") &&
                     w.attention()->status().contains("untrained scheme"),
                 qPrintable(w.attention()->status()));
        if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
            w.grab().save(shots + "/attention_gemma4.png");
    }

    // A PaddleOCR-VL folder runs in the Attention tab: the ERNIE decoder's three layers, Qwen2-VL's M-RoPE.
    void attentionTabRunsPaddleOcrVl()
    {
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder("paddleocr-vl-tiny", model.path()));
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        const QString status = w.attention()->status();
        QVERIFY2(status.section('\n', 1).startsWith("scheme mrope") && status.contains("allocation sectioned[4,6,6]"), qPrintable(status));
        QCOMPARE(w.attention()->layers(), 3);
        QVERIFY(!w.attention()->overlay().isNull());
        if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
            w.grab().save(shots + "/attention_paddleocr.png");
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
        QVERIFY2(status.contains("6 of 8 layers are Gated DeltaNet") && status.contains("attention layers 3, 7") &&
                     status.contains("rotate 8 of 32 dims"),
                 qPrintable(status));
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

    // The MoE members run in the tab like their dense siblings, and its status names the family and its mixture.
    void attentionTabRunsTheMoeMembers_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("family");
        QTest::newRow("qwen3_5_moe") << "qwen35moe-tiny"
                                     << "qwen3_5_moe, MoE: 8 experts, top-2 + a shared expert";
        QTest::newRow("qwen3_vl_moe") << "qwen3vlmoe-tiny"
                                      << "qwen3_vl_moe, MoE: 8 experts, top-2 (2 of 3 layers sparse)";
        QTest::newRow("glm4v_moe") << "glm4vmoe-tiny"
                                   << "glm4v_moe, MoE: 8 experts, top-2 + a shared expert (2 of 3 layers sparse)";
    }
    void attentionTabRunsTheMoeMembers()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, family);
        QTemporaryDir dir, model;
        QVERIFY(ropescope::test::makeModelFolder(fixture, model.path()));
        MainWindow w(dir.path());
        QSignalSpy finished(w.attention(), &ropescope::gui::AttentionPanel::runFinished);
        QVERIFY2(openedInAttentionTab(w, finished, model.path()), qPrintable(w.attention()->status()));
        QVERIFY2(w.attention()->status().contains(family), qPrintable(w.attention()->status()));
        QVERIFY(!w.attention()->overlay().isNull());
        // The Experts view appears for a mixture and holds the run's routing: every image token goes to top-k
        // distinct experts, so each sparse layer's image shares add up to k (2 here), as do the text shares.
        auto* tabs = w.attention()->findChild<QTabWidget*>("attentionViews");
        const int expertsTab = static_cast<int>(ropescope::gui::AttentionView::Experts);
        QVERIFY(tabs->isTabVisible(expertsTab));
        tabs->setCurrentIndex(expertsTab);
        auto* page = qobject_cast<ropescope::gui::ExpertsPage*>(tabs->widget(expertsTab));
        QVERIFY(page);
        QVERIFY2(page->findChild<QLabel*>("expertsNote")->text().startsWith(family),
                 qPrintable(page->findChild<QLabel*>("expertsNote")->text()));
        const QList<QByteArray> rows = page->table().trimmed().split('\n');
        const auto config = ropescope::model::loadModelConfig(model.path() + "/config.json");
        int sparse = 0;
        for (int l = 0; l < config.text.layers; ++l)
            sparse += config.text.moe.isSparse(l) ? 1 : 0;
        QCOMPARE(rows.size(), 1 + sparse * config.text.moe.experts); // the header, then each sparse layer's experts
        std::map<int, std::pair<double, double>> sums;
        for (qsizetype i = 1; i < rows.size(); ++i) {
            const QList<QByteArray> c = rows[i].split(',');
            sums[c[0].toInt()].first += c[2].toDouble();
            sums[c[0].toInt()].second += c[3].toDouble();
        }
        for (const auto& [layer, sum] : sums) {
            // The table's 9 significant digits, 8 experts: a wrong count is off by at least 1 / tokens (> 1e-3).
            QVERIFY2(std::abs(sum.first - 2) < 1e-6 && std::abs(sum.second - 2) < 1e-6,
                     qPrintable(QString("layer %1: %2, %3").arg(layer).arg(sum.first, 0, 'g', 12).arg(sum.second, 0, 'g', 12)));
        }
        QVERIFY(page->figureSize().width() > 0);
        if (const QString shots = qEnvironmentVariable("ROPESCOPE_SCREENSHOTS"); !shots.isEmpty())
            w.grab().save(shots + "/attention_" + fixture + ".png");
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
        QVERIFY2(inputs->text().contains("circle, square, triangle, diamond in red, green, blue, yellow, purple"),
                 qPrintable(inputs->text()));
        QVERIFY2(inputs->text().contains("objects 10-32 px across"),
                 qPrintable(inputs->text())); // what a drawing of their own must keep to
        QVERIFY(!note->isVisible());
        auto* question = w.attention()->findChild<QLineEdit*>("question");
        question->setText("what colour is the big circle?");
        QVERIFY(note->isVisible());
        QVERIFY2(note->text().contains("does not know the words 'big', 'circle?'"), qPrintable(note->text()));
        question->setText("what colour is the circle");
        QVERIFY(!note->isVisible());
    }
};

ROPESCOPE_GUI_SUITE_MAIN(TestGuiAttention)
#include "test_gui_attention.moc"

// File > Check position ids... in the real window: a dump folder (one right batch, one with 1-D positions)
// checked against a fixture model's rule on the dialog's worker, the differing sample listed with its kind,
// its figure shown, and "Open in the explorer" loading the pipeline's positions as the window's scheme.
#include "tests/support/test_paths.h"
#include "app/gui/check_positions_dialog.h"
#include "tests/gui/gui_test_support.h"
#include "app/gui/main_window.h"
#include "core/model/analysis/position_dump.h"
#include "core/model/engine/safetensors.h"
#include "views/widgets/chart_view.h"
#include "views/widgets/parameter_panel.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using ropescope::gui::CheckPositionsDialog;
using ropescope::gui::MainWindow;
using namespace ropescope::model;

namespace {

const QString kFixture = QString(ROPESCOPE_TEST_DATA) + "/fixtures/qwen2vl-tiny/";

bool writeDump(const QString& path, const QString& suffix, bool oneD)
{
    DumpBatch a = readDumpBatch(kFixture + "inputs" + suffix + ".safetensors");
    DumpTensor pos = readDumpBatch(kFixture + "expected" + suffix + ".safetensors").tensors.at("position_ids");
    if (oneD)
        for (int axis = 0; axis < 3; ++axis)
            for (int64_t i = 0; i < pos.shape[2]; ++i)
                pos.ints[static_cast<size_t>(axis * pos.shape[2] + i)] = i;
    SafeTensorsWriter w;
    for (const char* name : {"input_ids", "attention_mask", "image_grid_thw"}) {
        const DumpTensor& t = a.tensors.at(name);
        w.add(name, DType::I64, t.shape, t.ints.data(), t.ints.size() * sizeof(int64_t));
    }
    w.add("position_ids", DType::I64, pos.shape, pos.ints.data(), pos.ints.size() * sizeof(int64_t));
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(w.bytes()) > 0;
}

QAction* menuAction(MainWindow& w, const QString& text)
{
    for (QAction* menu : w.menuBar()->actions())
        if (menu->menu())
            for (QAction* a : menu->menu()->actions())
                if (a->text().remove('&') == text)
                    return a;
    return nullptr;
}

} // namespace

class TestCheckPositionsDialog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void checksListsShowsAndOpens()
    {
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(dir.filePath("dump")));
        QVERIFY(writeDump(dir.filePath("dump/b0.safetensors"), "", false));
        QVERIFY(writeDump(dir.filePath("dump/b1.safetensors"), "_multi", true));
        MainWindow w(dir.filePath("session"));
        w.resize(1280, 720);
        w.show();
        QAction* action = menuAction(w, "Check position ids...");
        QVERIFY(action);
        action->trigger();
        auto* dialog = w.findChild<CheckPositionsDialog*>("checkPositionsDialog");
        QVERIFY(dialog && dialog->isVisible());

        // A model folder that is not one is said at once.
        dialog->setDump(dir.filePath("dump"));
        dialog->setRule(dir.filePath("nowhere"));
        QSignalSpy finished(dialog, &CheckPositionsDialog::finished);
        dialog->start();
        QVERIFY(!dialog->busy());
        QVERIFY2(dialog->summary().contains("config.json"), qPrintable(dialog->summary()));

        dialog->setRule(kFixture);
        dialog->start();
        QVERIFY(finished.wait(30000) || !dialog->busy());
        QVERIFY2(dialog->summary().contains("2 samples in 2 batches against qwen2-vl: 1 differ (1-d 1)"), qPrintable(dialog->summary()));
        QCOMPARE(dialog->differingCount(), 1);
        QVERIFY(dialog->findChild<ropescope::views::ChartView*>("checkFigure")->chartPainter()); // the first is selected
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            dialog->grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/check_positions_dialog.png");

        // Open in the explorer: the pipeline's positions become the window's scheme, on the sample's layout.
        auto* open = dialog->findChild<QPushButton*>("checkOpen");
        QVERIFY(open && open->isEnabled());
        open->click();
        QTRY_VERIFY(!w.readoutsBusy());
        QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
        QCOMPARE(QString::fromStdString(w.state().layout), QString("text:3,image:2x3,text:5,image:3x5,text:3"));
        QCOMPARE(w.panel()->schemeBox()->currentText(), QString("b1_row0.csv"));
        for (int k = 0; k < 32; ++k) // 1-D: t = h = w = the token's index
            QCOMPARE(w.readouts().table.positions(k, 1), double(k));

        // A bad dump: one line in the status, no list.
        QFile cut(dir.filePath("cut.safetensors"));
        QVERIFY(cut.open(QIODevice::WriteOnly));
        cut.write("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":");
        cut.close();
        dialog->setDump(cut.fileName());
        finished.clear();
        dialog->start();
        QVERIFY(finished.wait(30000));
        QVERIFY2(dialog->summary().startsWith("Check: ") && dialog->summary().contains("cut.safetensors"), qPrintable(dialog->summary()));
        QCOMPARE(dialog->differingCount(), 0);
    }
};

ROPESCOPE_GUI_SUITE_MAIN(TestCheckPositionsDialog)
#include "test_check_positions_dialog.moc"

// The Bias view opening results on disk (issue 44): a folder `ropescope bias` wrote, a `bias --slurm` run
// whose shards are all done (merged in the window, equal to the one-process result), one with a shard
// missing (where the shards stand, no figure), and folders that are neither.
#include "app/gui/bias_view.h"
#include "core/cluster/sharded_run.h"
#include "core/model/analysis/bias_state.h"
#include "tests/support/run_ropescope.h"

#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using ropescope::gui::BiasView;

namespace {

const QString kModel = QString(ROPESCOPE_TEST_DATA) + "/../../resources/models/mrope";

bool measure(const QStringList& extra, const QString& output)
{
    const RopescopeRun r = runRopescope(QStringList{"bias", "--model", kModel, "--samples", "9", "--schemes", "vrope", "--output", output} + extra);
    if (r.exitCode != 0)
        qWarning("%s", r.err.constData());
    return r.exitCode == 0;
}

QString statusOf(const BiasView& view)
{
    return view.findChild<QLabel*>("biasStatus")->text();
}

} // namespace

class TestBiasView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void opensResultsAndShardedRuns()
    {
        QTemporaryDir dir;
        QVERIFY(measure({}, dir.filePath("one")));
        const QString run = dir.filePath("run");
        for (int i = 0; i < 3; ++i)
            QVERIFY(measure({"--shard", QString("%1/3").arg(i)}, ropescope::cluster::shardFolder(run, i)));
        ropescope::cluster::ShardedRun record;
        record.kind = "bias";
        record.shards = 3;
        record.program = ROPESCOPE_BINARY;
        record.shardArgs = {"bias", "--model", kModel, "--samples", "9", "--schemes", "vrope"};
        record.workingDir = dir.path();
        ropescope::cluster::writeRun(run, record);
        const ropescope::model::BiasAccumulation one = ropescope::model::readBiasState(dir.filePath("one"));

        BiasView view;
        view.resize(1280, 720);
        view.show();
        view.openResult(dir.filePath("one"));
        QVERIFY2(view.result(), qPrintable(statusOf(view)));
        QCOMPARE(view.result()->sampleCount(), 9);
        QCOMPARE(view.findChild<QTableWidget*>("biasTable")->rowCount(), 2 * 4); // own + vrope, 4 layers
        QVERIFY(statusOf(view).contains("opened from"));

        // Every shard done, no merge written yet: merged in the window, as the merge job would.
        view.openResult(run);
        QVERIFY2(view.result(), qPrintable(statusOf(view)));
        QVERIFY(statusOf(view).contains("merged here from the 3 shards"));
        QCOMPARE(view.result()->toJson(), one.toJson());
        if (qEnvironmentVariableIsSet("ROPESCOPE_SCREENSHOTS"))
            view.grab().save(qEnvironmentVariable("ROPESCOPE_SCREENSHOTS") + "/bias_sharded_run_1280.png");

        // A shard missing: where the shards stand, and no figure of a part.
        QVERIFY(QDir(ropescope::cluster::shardFolder(run, 1)).removeRecursively());
        view.openResult(run);
        QVERIFY(!view.result());
        QVERIFY2(statusOf(view).contains("2 of 3 shards done, 0 failed, 1 not run or still queued"), qPrintable(statusOf(view)));

        // Neither a result nor a run; a run of another command.
        view.openResult(dir.path());
        QVERIFY2(statusOf(view).contains("holds no bias result"), qPrintable(statusOf(view)));
        record.kind = "eval";
        QVERIFY(QDir().mkpath(dir.filePath("evalrun")));
        ropescope::cluster::writeRun(dir.filePath("evalrun"), record);
        view.openResult(dir.filePath("evalrun"));
        QVERIFY2(statusOf(view).contains("is a sharded eval run, not a bias measurement"), qPrintable(statusOf(view)));
        QVERIFY(!view.result());
    }
};

QTEST_MAIN(TestBiasView)
#include "test_bias_view.moc"

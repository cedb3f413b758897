// The sharded-run record (sharded_run.json) against malformed files, where shards stand from their folders
// and the queue, and the job script: bash runs it, and each argument reaches the program as it was typed.
#include "core/cluster/sharded_run.h"
#include "core/cluster/slurm.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace ropescope::cluster;

namespace {

ShardedRun sampleRun()
{
    ShardedRun run;
    run.kind = "bias";
    run.shards = 4;
    run.program = "/opt/ropescope/bin/ropescope";
    run.shardArgs = {"bias", "--model", "models/qwen", "--samples", "200"};
    run.workingDir = "/home/me/work";
    run.slurmArgs = "--partition=gpu --time=2:00:00";
    run.submissions.push_back({"41", "42", {0, 1, 2, 3}, "2026-11-25T10:00:00Z"});
    run.submissions.push_back({"50", "51", {2}, "2026-11-25T11:00:00Z"});
    return run;
}

QString runScript(const QString& script, const QStringList& args, const QProcessEnvironment& env)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start("bash", QStringList{script} + args);
    if (!p.waitForFinished(10000))
        return "<no answer>";
    return QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
}

} // namespace

class TestShardedRun : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void recordRoundTrips()
    {
        const ShardedRun run = sampleRun();
        const ShardedRun back = ShardedRun::fromJson(run.toJson(), "run");
        QVERIFY(back.sameMeasurement(run));
        QCOMPARE(back.slurmArgs, run.slurmArgs);
        QCOMPARE(back.submissions.size(), size_t(2));
        QCOMPARE(back.submissions[1].arrayJob, QString("50"));
        QCOMPARE(back.submissions[1].shards, std::vector<int>{2});
        ShardedRun other = run;
        other.shardArgs.last() = "300";
        QVERIFY(!other.sameMeasurement(run));
    }

    void malformedRecordsAreRefused_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("format") << "format" << QJsonValue(7) << "not a sharded-run record";
        QTest::newRow("kind") << "kind" << QJsonValue("rm -rf") << "unknown kind";
        QTest::newRow("no shards") << "shards" << QJsonValue(0) << "'shards' must be a whole number";
        QTest::newRow("too many shards") << "shards" << QJsonValue(1e9) << "'shards' must be a whole number";
        QTest::newRow("fractional shards") << "shards" << QJsonValue(2.5) << "'shards' must be a whole number";
        QTest::newRow("arguments") << "arguments" << QJsonValue(QJsonArray{"bias", 3}) << "'arguments' must be a list of strings";
        QTest::newRow("program") << "program" << QJsonValue(12) << "'program' is missing";
        QTest::newRow("submission shard") << "submissions"
                                          << QJsonValue(
                                                 QJsonArray{QJsonObject{{"array_job", "1"}, {"merge_job", "2"}, {"shards", QJsonArray{9}}}})
                                          << "names a shard outside 0..3";
    }
    void malformedRecordsAreRefused()
    {
        QFETCH(QString, key);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        QJsonObject json = sampleRun().toJson();
        json[key] = value;
        try {
            ShardedRun::fromJson(json, "f.json");
            QFAIL("accepted");
        } catch (const RunError& e) {
            QVERIFY2(QString(e.what()).startsWith("f.json: ") && QString(e.what()).contains(message), e.what());
        }
    }

    void folderWithoutRecordIsNotARun()
    {
        QTemporaryDir dir;
        QVERIFY(!isShardedRun(dir.path()));
        try {
            readRun(dir.path());
            QFAIL("accepted");
        } catch (const RunError& e) {
            QVERIFY2(QString(e.what()).contains("is not a sharded run"), e.what());
        }
        writeRun(dir.path(), sampleRun());
        QVERIFY(isShardedRun(dir.path()));
        QVERIFY(readRun(dir.path()).sameMeasurement(sampleRun()));
        QFile broken(QDir(dir.path()).filePath(kRunFile));
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write("{\"format\": 1, \"kind\": ");
        broken.close();
        QVERIFY_THROWS_EXCEPTION(RunError, readRun(dir.path()));
    }

    void shardsStandWhereTheirFilesAndTheQueueSay()
    {
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(QDir(dir.path()).filePath("logs")));
        QFile log(shardLog(dir.path(), 3)); // shard 3 ran (it left a log) and wrote no result: failed
        QVERIFY(log.open(QIODevice::WriteOnly));
        log.close();
        const std::vector<ShardState> states = shardStates(
            dir.path(), 6, [](int i) { return i == 0; },
            [](int i) {
                return i == 1 ? QString("RUNNING") : i == 2 ? QString("PENDING") : i == 5 ? QString("CANCELLED") : QString();
            });
        const std::vector<ShardState> expected{ShardState::Done,   ShardState::Running, ShardState::Pending,
                                               ShardState::Failed, ShardState::Missing, ShardState::Missing};
        QCOMPARE(states, expected);
        QCOMPARE(listShards({1, 3, 7}), QString("1, 3 and 7"));
        QCOMPARE(listShards({2}), QString("2"));
    }

    void slurmArgsPassOnlyTheirOwnOptions()
    {
        QCOMPARE(parseSlurmArgs("--partition=gpu --time=2:00:00 --gres gpu:1"),
                 (QStringList{"--partition=gpu", "--time=2:00:00", "--gres", "gpu:1"}));
        QVERIFY(parseSlurmArgs("").isEmpty());
        for (const char* bad :
             {"--array=0-9", "-o log", "--dependency=afterok:1", "--wrap=ls", "gpu", "--time=1 # c", "--mem=1G\n--wrap=x"})
            QVERIFY_THROWS_EXCEPTION(RunError, parseSlurmArgs(bad));
    }

    // The script, run by bash as Slurm would run it, hands every argument over unchanged (quotes, spaces,
    // $ and backslashes included) and puts the task id where the shard goes.
    void jobScriptPassesArgumentsThrough()
    {
        QTemporaryDir dir;
        ShardedRun run = sampleRun();
        run.program = "/usr/bin/printf";
        run.workingDir = dir.path();
        run.shardArgs = {"[%s]\\n", "it's a \"test\"", "$HOME `id` \\n", "two  spaces"};
        const QString script = QDir(dir.path()).filePath("job.sh");
        QFile f(script);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(jobScript(run, dir.path() + "/out dir",
                          {"--shard", QString(kShardIndex) + "/4", "--output", QString("out $dir/shards/") + kShardIndex + "/x"},
                          {"[%s]\\n", "merge'd"})
                    .toUtf8());
        f.close();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("SLURM_ARRAY_TASK_ID", "2");
        QCOMPARE(runScript(script, {}, env),
                 QString("[it's a \"test\"]\n[$HOME `id` \\n]\n[two  spaces]\n[--shard]\n[2/4]\n[--output]\n[out $dir/shards/2/x]\n"));
        QCOMPARE(runScript(script, {"merge"}, env), QString("[merge'd]\n"));
        env.remove("SLURM_ARRAY_TASK_ID");
        QVERIFY(runScript(script, {}, env).contains("one shard per array task: sbatch --array=0-3"));
        const QString text = jobScript(run, dir.path(), {}, {});
        QVERIFY(text.contains("#SBATCH --partition=gpu --time=2:00:00\n"));
        QVERIFY(text.contains("#SBATCH --chdir=" + dir.path() + "\n"));
    }
};

QTEST_MAIN(TestShardedRun)
#include "test_sharded_run.moc"

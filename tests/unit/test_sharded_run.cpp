// The sharded-run record (sharded_run.json) against malformed files, where shards stand from their folders
// and the queue, and the job script: bash runs it, and each argument reaches the program as it was typed.
#include "core/cluster/script_text.h"
#include "core/cluster/shard_coverage.h"
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
        // Short options with their values, attached or not, and options sbatch knows that merely start like a
        // refused one's abbreviation (--export, --exclusive, --wait-all-nodes) pass.
        QCOMPARE(parseSlurmArgs("-pgpu -t 10 -J name -H --export=ALL --exclusive --wait-all-nodes=1 -G 2"),
                 (QStringList{"-pgpu", "-t", "10", "-J", "name", "-H", "--export=ALL", "--exclusive", "--wait-all-nodes=1", "-G", "2"}));
        for (const char* bad :
             {"--array=0-9", "-o log", "--dependency=afterok:1", "--wrap=ls", "gpu", "--time=1 # c", "--mem=1G\n--wrap=x"})
            QVERIFY_THROWS_EXCEPTION(RunError, parseSlurmArgs(bad));
    }

    // sbatch (getopt_long) takes any unambiguous prefix of a long option and a short option's value attached
    // to it (checked against Slurm 22.05's sbatch: `sbatch --arr` is --array, `sbatch --d` is ambiguous), so
    // the refused options are refused in every spelling that reaches them (issue 54, item 6). Each of these
    // passed the exact-name check before.
    void slurmArgsRefuseAbbreviationsAndAttachedValues_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("option");
        QTest::newRow("--arr=") << "--arr=0-99"
                                << "--array";
        QTest::newRow("-a0-99") << "-a0-99"
                                << "--array";
        QTest::newRow("--out=") << "--out=/tmp/x"
                                << "--output";
        QTest::newRow("-o/path") << "-o/tmp/x"
                                 << "--output";
        QTest::newRow("--dep=") << "--dep=afterok:1"
                                << "--dependency";
        QTest::newRow("-D/") << "-D/"
                             << "--chdir";
        QTest::newRow("--wr=") << "--wr=ls"
                               << "--wrap";
        QTest::newRow("--chd=") << "--chd=/"
                                << "--chdir";
        QTest::newRow("--err") << "--err /tmp/e"
                               << "--error";
        QTest::newRow("-e in a cluster") << "-Qe/tmp/e"
                                         << "--error";
        QTest::newRow("-o after -H") << "-Ho/tmp/x"
                                     << "--output";
        QTest::newRow("--pars") << "--pars"
                                << "--parsable";
        QTest::newRow("--kill") << "--kill=no"
                                << "--kill-on-invalid-dep";
        QTest::newRow("--wait") << "--wait"
                                << "--wait";
        QTest::newRow("-W") << "-W"
                            << "--wait";
        QTest::newRow("--test") << "--test"
                                << "--test-only";
        QTest::newRow("--d (ambiguous, but could be --dependency)") << "--d=afterok:1"
                                                                    << "--dependency";
    }
    void slurmArgsRefuseAbbreviationsAndAttachedValues()
    {
        QFETCH(QString, args);
        QFETCH(QString, option);
        try {
            parseSlurmArgs("--partition=gpu " + args);
            QFAIL("accepted");
        } catch (const RunError& e) {
            QVERIFY2(QString(e.what()).contains("sbatch's " + option + " ") || QString(e.what()).contains("sbatch's " + option + ")"),
                     e.what());
        }
    }

    // A word that is no option's value ends sbatch's options and becomes the job script (`sbatch --hold gpu
    // job.sh` runs a script named gpu), and an option left without its value would take RopeScope's next one.
    void slurmArgsRefuseWordsSbatchWouldTakeForTheScript()
    {
        for (const char* bad : {"--hold gpu", "--nice 5", "--partition=gpu x.sh", "--", "-", "--partition=gpu : --partition=cpu",
                                "--partition", "-p", "--unknown-option value", "--comment=packjob"})
            QVERIFY_THROWS_EXCEPTION(RunError, parseSlurmArgs(bad));
        QCOMPARE(parseSlurmArgs("--comment --array=1"), (QStringList{"--comment", "--array=1"})); // sbatch's value of --comment
    }

    // Every path and argument that goes into the job script is checked before a byte is written (issue 54,
    // item 2): a line break in the output folder, the current folder, the program's path or any argument
    // would end the comment or #SBATCH line it is in and start a command of its own.
    void scriptInputsWithControlCharactersAreRefused_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("newline in the output") << "output"
                                               << "/tmp/run_nl\ntouch /tmp/x/PWNED #"
                                               << "--output '/tmp/run_nl\\ntouch";
        QTest::newRow("newline in the current folder") << "workingDir"
                                                       << "/home/a\nb"
                                                       << "the current folder '/home/a\\nb'";
        QTest::newRow("carriage return in the program") << "program"
                                                        << "/opt/rs\r/ropescope"
                                                        << "(\\r)";
        QTest::newRow("escape in an argument") << "arg"
                                               << "\x1b[31mred"
                                               << "'\\e[31mred'";
        QTest::newRow("DEL in an argument") << "arg"
                                            << "a\x7f"
                                            << "(\\x7f)";
        QTest::newRow("C1 in an argument") << "arg" << QString("a") + QChar(0x85) << "(\\x85)";
        QTest::newRow("tab in the slurm args") << "slurmArgs"
                                               << "--time=1\t--mem=2G"
                                               << "(\\t)";
        QTest::newRow("not UTF-8") << "output" << QString("/tmp/r") + QChar(0xfffd) << "not valid UTF-8";
        QTest::newRow("{shard} in the output") << "output"
                                               << "/tmp/run{shard}x"
                                               << "holds {shard}";
    }
    void scriptInputsWithControlCharactersAreRefused()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, message);
        ShardedRun run = sampleRun();
        QString output = "/tmp/run";
        if (field == "output")
            output = value;
        else if (field == "workingDir")
            run.workingDir = value;
        else if (field == "program")
            run.program = value;
        else if (field == "arg")
            run.shardArgs << value;
        else
            run.slurmArgs = value;
        try {
            jobScript(run, output, {}, {});
            QFAIL("accepted");
        } catch (const RunError& e) {
            QVERIFY2(QString(e.what()).contains(message) && !QString(e.what()).contains('\n') && !QString(e.what()).contains('\x1b'),
                     e.what());
        }
    }

    void printableEscapesControlCharacters()
    {
        QCOMPARE(printable("plain /path with spaces"), QString("plain /path with spaces"));
        QCOMPARE(printable("a\nb\tc\x1b[2J\x07"), QString("a\\nb\\tc\\e[2J\\x07"));
        QCOMPARE(printable(QString("x") + QChar(0x202e) + "y" + QChar(0x9b)), QString("x\\u{202e}y\\x9b"));
    }

    // A tampered record's job ids are printed and handed to scancel in messages: numbers only.
    void recordJobIdsAreNumbers()
    {
        QJsonObject json = sampleRun().toJson();
        json["submissions"] = QJsonArray{QJsonObject{{"array_job", "41;rm -rf ~"}, {"merge_job", "42"}, {"shards", QJsonArray{0}}}};
        QVERIFY_THROWS_EXCEPTION(RunError, ShardedRun::fromJson(json, "f.json"));
        json["submissions"] = QJsonArray{QJsonObject{{"array_job", ""}, {"merge_job", "42"}, {"shards", QJsonArray{}}}};
        QCOMPARE(ShardedRun::fromJson(json, "f.json").submissions.front().mergeJob, QString("42"));
    }

    // Which shards a merge lacks (issue 54, item 3), against the sets written out by hand.
    void coverageNamesTheMissingShards()
    {
        const auto shard = [](int i, int n, int total) {
            std::vector<int64_t> s;
            for (int k = i; k < total; k += n)
                s.push_back(k);
            return s;
        };
        // Shards 0, 1 and 3 of 4 over 16 samples: shard 2 (samples 2, 6, 10, 14) is missing.
        Coverage c = shardCoverage({shard(0, 4, 16), shard(1, 4, 16), shard(3, 4, 16)}, 16);
        QCOMPARE(c.measured, int64_t(12));
        QCOMPARE(c.missingCount, int64_t(4));
        QCOMPARE(c.shards, 4);
        QCOMPARE(c.missingShards, std::vector<int>{2});
        QCOMPARE(c.missingSamples, (std::vector<int64_t>{2, 6, 10, 14}));
        QCOMPARE(c.describe(), QString("shard 2 of 4 is missing (4 of 16 samples)"));
        // 10 samples in 4 shards (sizes 3, 3, 2, 2), given in another order, two missing.
        c = shardCoverage({shard(3, 4, 10), shard(0, 4, 10)}, 10);
        QCOMPARE(c.missingShards, (std::vector<int>{1, 2}));
        QCOMPARE(c.describe(), QString("shards 1 and 2 of 4 are missing (5 of 10 samples)"));
        // One sample per shard: the smallest split in which each is a whole shard.
        c = shardCoverage({{0}, {1}, {3}}, 4);
        QCOMPARE(c.shards, 4);
        QCOMPARE(c.missingShards, std::vector<int>{2});
        // Shard 0 of 2 and shard 1 of 4 are not shards of one split: the samples are named instead.
        c = shardCoverage({shard(0, 2, 16), shard(1, 4, 16)}, 16);
        QCOMPARE(c.shards, 0);
        QCOMPARE(c.describe(),
                 QString("4 of 16 samples are missing (3, 7, 11 and 15), and the inputs are not whole shards of one "
                         "--shard i/n split"));
        // A run's record knows its split: shards 0 and 2 of 4 complete (their step, 4, says so too).
        c = shardCoverage({shard(0, 4, 16), shard(2, 4, 16)}, 16, 4);
        QCOMPARE(c.missingShards, (std::vector<int>{1, 3}));
        // Complete sets, however split.
        QVERIFY(shardCoverage({shard(0, 2, 16), shard(1, 4, 16), shard(3, 4, 16)}, 16).complete());
        QVERIFY(shardCoverage({shard(0, 1, 5)}, 5).complete());
        const QJsonObject json = shardCoverage({shard(0, 4, 16), shard(1, 4, 16), shard(3, 4, 16)}, 16).toJson();
        QCOMPARE(json.value("missing_shards").toArray(), QJsonArray{2});
        QCOMPARE(json.value("samples").toInt(), 12);
        QCOMPARE(json.value("stream_samples").toInt(), 16);
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

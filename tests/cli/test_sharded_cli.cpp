// `--slurm` runs and merges against hostile and careless inputs (issue 54): a line break or a command
// substitution in a path must not become a command of the job script, refused sbatch options are refused in
// every spelling sbatch accepts, a tampered record prints no raw escape sequence, and a merge of part of the
// shards is refused, or made on purpose with --allow-partial and then says so.
#include "tests/support/test_paths.h"
#include "tests/support/run_ropescope.h"
#include "tests/support/test_files.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace {

QString bundledModel()
{
    return QString(ROPESCOPE_TEST_DATA) + "/../../resources/models/mrope";
}

bool oneLine(const QByteArray& err)
{
    return !err.trimmed().isEmpty() && !err.trimmed().contains('\n');
}

// ropescope run from `folder` (runRopescope runs it from the test's own).
RopescopeRun runIn(const QString& folder, const QStringList& args)
{
    QProcess p;
    p.setWorkingDirectory(folder);
    p.start(ROPESCOPE_BINARY, args);
    if (!p.waitForFinished(120000))
        return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, p.readAllStandardOutput(), p.readAllStandardError()};
}

// bash runs the job script as a Slurm task (`task` >= 0) or as the merge job.
int runScript(const QString& script, int task)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (task >= 0)
        env.insert("SLURM_ARRAY_TASK_ID", QString::number(task));
    p.setProcessEnvironment(env);
    p.start("bash", task >= 0 ? QStringList{script} : QStringList{script, "merge"});
    if (!p.waitForFinished(120000))
        return -1;
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
}

// A bias state of one scheme, layer 0, a 2x2 grid, holding `samples` (each map uniform) of a stream of `total`
// (as tests/cli/test_bias_state_input.cpp writes them).
QJsonObject biasState(const QList<int>& samples, int total)
{
    constexpr double kFixed = 1099511627776.0; // 2^40
    QJsonArray cells;
    for (int map = 0; map < 2; ++map) {
        QJsonArray sums, stats;
        for (int k = 0; k < 4; ++k)
            sums.append(QString::number(static_cast<qint64>(samples.size()) * static_cast<qint64>(kFixed / 4)));
        for (int s : samples)
            stats.append(QJsonArray{QString::number(s), 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -0.1, 0.2, 0.3, 0.1, 0.0, 0.0});
        cells.append(QJsonObject{{"map_sum", sums}, {"samples", stats}});
    }
    return QJsonObject{{"format", "ropescope bias state 1"},
                       {"model", "m"},
                       {"source", "s"},
                       {"schemes", QJsonArray{"own"}},
                       {"layers", QJsonArray{0}},
                       {"rows", 2},
                       {"cols", 2},
                       {"frames", 0},
                       {"keep_samples", false},
                       {"total", QString::number(total)},
                       {"cells", cells},
                       {"geometry", QJsonArray{QJsonObject{{"sample", "0"}, {"ptd", QJsonArray{0.1}}, {"prior_spread", QJsonArray{0.2}}}}}};
}

// Shard i of n over `total` samples: k with k mod n = i.
QList<int> shardOf(int i, int n, int total)
{
    QList<int> s;
    for (int k = i; k < total; k += n)
        s << k;
    return s;
}

// An eval state of shard i of n over `total` synthetic samples; sample k was answered right when k is even.
QJsonObject evalState(int i, int n, int total)
{
    QJsonArray samples;
    for (int k : shardOf(i, n, total))
        samples.append(QJsonObject{{"index", k}, {"type", "count"}, {"right", k % 2 == 0}});
    return QJsonObject{{"format", 1},    {"scheme", "mrope"}, {"rendering", "grid"},
                       {"layers", 1},    {"swapped", false},  {"source", QJsonObject{{"model", "m"}, {"seed", 1}, {"rendering", "grid"}}},
                       {"total", total}, {"samples", samples}};
}

} // namespace

class TestShardedCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The repro of issue 54: the path's line break ended the script's "--status" comment and `bash
    // slurm_job.sh merge` ran `touch`. Now it is refused in one line, and nothing is written or run.
    void lineBreakInOutputIsRefused()
    {
        QTemporaryDir dir;
        const QString pwned = dir.filePath("PWNED");
        const QString output = dir.filePath("run_nl\ntouch " + pwned + " #");
        const auto r =
            runRopescope({"bias", "--model", bundledModel(), "--samples", "4", "--output", output, "--slurm", "2", "--dry-run"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("--output") && r.err.contains("run_nl\\ntouch") && r.err.contains("control character"),
                 r.err.constData());
        QVERIFY(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden).isEmpty()); // nothing written
        QVERIFY(!QFile::exists(pwned));
    }

    // A line break in the current folder reaches the script too (relative paths are made absolute, and the
    // folder is the script's `cd` and #SBATCH --chdir).
    void lineBreakInTheCurrentFolderIsRefused()
    {
        QTemporaryDir dir;
        const QString cwd = dir.filePath("cwd\ntouch PWNED #");
        QVERIFY(QDir().mkpath(cwd));
        const auto r = runIn(cwd, {"bias", "--model", bundledModel(), "--samples", "4", "--output", "out", "--slurm", "2", "--dry-run"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("the current folder") && r.err.contains("\\n"), r.err.constData());
        QVERIFY(QDir(cwd).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden).isEmpty());
    }

    // `$(...)`, backquotes and quotes in the output folder are a name, never a command: the script is written,
    // both shards and the merge run from it under bash and measure into that folder, and nothing else runs.
    void commandSubstitutionInOutputRunsNothing()
    {
        QTemporaryDir dir;
        const QString pwned = dir.filePath("PWNED");
        const QString output = dir.filePath("run $(touch " + pwned + ") `touch " + pwned + "` it's");
        const auto r =
            runRopescope({"bias", "--model", bundledModel(), "--samples", "4", "--output", output, "--slurm", "2", "--dry-run"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QString script = QDir(output).filePath("slurm_job.sh");
        QVERIFY(QFile::exists(script));
        QCOMPARE(runScript(script, 0), 0);
        QCOMPARE(runScript(script, 1), 0);
        QCOMPARE(runScript(script, -1), 0);
        QVERIFY(!QFile::exists(pwned));
        const QJsonObject bias = QJsonDocument::fromJson(contents(QDir(output).filePath("bias.json"))).object();
        QCOMPARE(bias.value("samples").toInt(), 4);
        QCOMPARE(bias.value("complete").toBool(), true);
    }

    // `--output './run{shard}x'` made each shard write outside the run (the script put the task id there).
    void shardPlaceholderInOutputIsRefused()
    {
        QTemporaryDir dir;
        const auto r = runRopescope(
            {"bias", "--model", bundledModel(), "--samples", "4", "--output", dir.filePath("run{shard}x"), "--slurm", "2", "--dry-run"},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("{shard}"), r.err.constData());
        QVERIFY(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty());
    }

    // sbatch takes abbreviations and attached short values; each of these reached it before (issue 54, item 6).
    void refusedSbatchOptionsAreRefusedInEverySpelling_data()
    {
        QTest::addColumn<QString>("args");
        for (const char* a : {"--arr=0-99", "-a0-99", "--out=/tmp/x", "-o/tmp/x", "--dep=afterok:1", "-D/", "--wr=ls", "--chd=/"})
            QTest::newRow(a) << QString(a);
    }
    void refusedSbatchOptionsAreRefusedInEverySpelling()
    {
        QFETCH(QString, args);
        QTemporaryDir dir;
        const auto r = runRopescope({"bias", "--model", bundledModel(), "--samples", "4", "--output", dir.filePath("run"), "--slurm", "2",
                                     "--slurm-args", "--time=1:00:00 " + args, "--dry-run"},
                                    false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("--slurm-args: " + args.toUtf8()), r.err.constData());
        QVERIFY(!QFile::exists(dir.filePath("run")));
    }

    // A record edited to hold escape sequences: --status prints them escaped, never raw to the terminal.
    void statusEscapesATamperedRecord()
    {
        QTemporaryDir dir;
        const QString output = dir.filePath("run");
        auto r =
            runRopescope({"bias", "--model", bundledModel(), "--samples", "4", "--output", output, "--slurm", "2", "--dry-run"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QString record = QDir(output).filePath("sharded_run.json");
        QJsonObject json = QJsonDocument::fromJson(contents(record)).object();
        json["submissions"] = QJsonArray{QJsonObject{{"array_job", "41"},
                                                     {"merge_job", "42"},
                                                     {"shards", QJsonArray{0, 1}},
                                                     {"submitted_at", "\x1b]0;owned\x07\x1b[2J\x1b[31mred"}}};
        writeFile(record, QJsonDocument(json).toJson());
        r = runRopescope({"bias", "--status", output}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(!r.out.contains('\x1b') && !r.out.contains('\x07'), r.out.constData());
        QVERIFY2(r.out.contains("\\e]0;owned\\x07\\e[2J\\e[31mred"), r.out.constData());

        json["submissions"] = QJsonArray{QJsonObject{{"array_job", "41\x1b[2J"}, {"merge_job", "42"}, {"shards", QJsonArray{0}}}};
        writeFile(record, QJsonDocument(json).toJson());
        r = runRopescope({"bias", "--status", output}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && !r.err.contains('\x1b') && r.err.contains("not a Slurm job number"), r.err.constData());
    }

    // The repro of issue 54, item 3: shards 0, 1 and 3 of 4 merged with success into a figure of 12 of 16
    // samples. Now refused, naming shard 2, with nothing written; --allow-partial merges them and says so.
    void partialBiasMergeIsRefusedUnlessAllowed()
    {
        QTemporaryDir dir;
        QStringList shards;
        for (int i : {0, 1, 3}) {
            const QString folder = dir.filePath(QString("s%1").arg(i));
            QDir().mkpath(folder);
            writeFile(folder + "/bias_state.json", QJsonDocument(biasState(shardOf(i, 4, 16), 16)).toJson(QJsonDocument::Compact));
            shards << folder;
        }
        const QString part = dir.filePath("part");
        auto r = runRopescope(QStringList{"bias", "--merge"} + shards + QStringList{"--output", part}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("shard 2 of 4 is missing (4 of 16 samples)") && r.err.contains("--allow-partial"),
                 r.err.constData());
        QVERIFY(!QFile::exists(part));

        r = runRopescope(QStringList{"bias", "--merge"} + shards + QStringList{"--output", part, "--allow-partial"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("merged 12 of 16 samples from 3 shards; PARTIAL"), r.err.constData());
        const QJsonObject bias = QJsonDocument::fromJson(contents(QDir(part).filePath("bias.json"))).object();
        const QJsonObject partial = bias.value("partial_merge").toObject();
        QCOMPARE(partial.value("missing_shards").toArray(), QJsonArray{2});
        QCOMPARE(partial.value("shards").toInt(), 4);
        QCOMPARE(partial.value("samples").toInt(), 12);
        QCOMPARE(partial.value("missing_samples").toInt(), 4);
        QCOMPARE(bias.value("complete").toBool(), false);
        QVERIFY(contents(QDir(part).filePath("bias.svg")).contains("PARTIAL MERGE"));

        // The whole set merges as before, and says nothing of a partial merge.
        const QString s2 = dir.filePath("s2");
        QDir().mkpath(s2);
        writeFile(s2 + "/bias_state.json", QJsonDocument(biasState(shardOf(2, 4, 16), 16)).toJson(QJsonDocument::Compact));
        r = runRopescope(QStringList{"bias", "--merge"} + shards + QStringList{s2, "--output", dir.filePath("all")}, false);
        QVERIFY2(r.exitCode == 0 && r.err.contains("merged 16 of 16 samples from 4 shards\n"), r.err.constData());
        QVERIFY(!QJsonDocument::fromJson(contents(dir.filePath("all/bias.json"))).object().contains("partial_merge"));
    }

    // eval --merge likewise: its report over shards 0, 1 and 3 of 4 covers 6 of 8 samples.
    void partialEvalMergeIsRefusedUnlessAllowed()
    {
        QTemporaryDir dir;
        QStringList states;
        for (int i : {0, 1, 3}) {
            states << dir.filePath(QString("s%1.json").arg(i));
            writeFile(states.last(), QJsonDocument(evalState(i, 4, 8)).toJson());
        }
        auto r =
            runRopescope(QStringList{"eval", "--merge"} + states + QStringList{"--output", dir.filePath("eval.json"), "--json"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.contains("shard 2 of 4 is missing (2 of 8 samples)"), r.err.constData());
        QVERIFY(!QFile::exists(dir.filePath("eval.json")));

        r = runRopescope(QStringList{"eval", "--merge"} + states +
                             QStringList{"--output", dir.filePath("eval.json"), "--json", "--allow-partial"},
                         false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject report = QJsonDocument::fromJson(contents(dir.filePath("eval.json"))).object();
        QCOMPARE(report.value("samples").toInt(), 6);
        // Samples 0, 4, 1, 5, 3, 7: the even ones, 0 and 4, were right.
        QCOMPARE(report.value("accuracy").toDouble(), 2.0 / 6.0);
        QCOMPARE(report.value("partial_merge").toObject().value("missing_shards").toArray(), QJsonArray{2});

        r = runRopescope(QStringList{"eval", "--merge"} + states + QStringList{"--output", dir.filePath("eval.txt"), "--allow-partial"},
                         false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(contents(dir.filePath("eval.txt")).contains("PARTIAL MERGE (--allow-partial): shard 2 of 4 is missing (2 of 8 samples)"));
    }
};

QTEST_MAIN(TestShardedCli)
#include "test_sharded_cli.moc"

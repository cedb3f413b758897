// The CLI and batch against hostile inputs (issue "Hostile inputs"): outputs into FIFOs and device nodes,
// batch outputs through symbolic links, flags that would end a batch, outputs two items share, FIFO inputs,
// out-of-range config values. FIFOs, device nodes and links are made privately in a temporary folder.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "run_ropescope.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace {

QString writeFile(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly))
        f.write(bytes);
    return path;
}

QByteArray contents(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QJsonObject manifestOf(const QString& out)
{
    return QJsonDocument::fromJson(contents(QDir(out).filePath("manifest.json"))).object();
}

bool oneLine(const QByteArray& err)
{
    return !err.trimmed().isEmpty() && !err.trimmed().contains('\n');
}

} // namespace

class TestHostileCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void outputIntoAFifoOrDeviceIsRefused()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("fifo");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        RopescopeRun r = runRopescope({"positions", "--scheme", "circle", "--layout", "text:3", "--output", fifo});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("not a regular file") && oneLine(r.err), r.err.constData());
        QVERIFY(QFileInfo(fifo).exists() && !QFileInfo(fifo).isFile());

        const QString device = dir.filePath("null");
        if (::mknod(QFile::encodeName(device).constData(), S_IFCHR | 0600, makedev(1, 3)) != 0)
            QSKIP("mknod not permitted here (the FIFO case above ran)");
        r = runRopescope({"positions", "--scheme", "circle", "--layout", "text:3", "--output", device});
        QCOMPARE(r.exitCode, 1);
        struct stat st {};
        QVERIFY(::lstat(QFile::encodeName(device).constData(), &st) == 0 && S_ISCHR(st.st_mode));
    }

    void batchOutputsStayInsideTheOutputFolder()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out"), outside = dir.filePath("outside");
        QVERIFY(QDir().mkpath(out) && QDir().mkpath(outside));
        writeFile(QDir(outside).filePath("t.json"), "kept");
        QVERIFY(QFile::link(outside, QDir(out).filePath("link")));
        QVERIFY(QFile::link(QDir(outside).filePath("t.json"), QDir(out).filePath("file.json")));
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "link/pwn.json"}, {"type": "ptd", "output": "file.json"},
                      {"type": "ptd", "output": "link/sub/deep.json"}, {"type": "ptd", "output": "inside/ok.json"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("out/link: is a symbolic link"), r.err.constData());
        QVERIFY(r.err.contains("file.json: is a symbolic link"));
        QCOMPARE(QDir(outside).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"t.json"});
        QCOMPARE(contents(QDir(outside).filePath("t.json")), QByteArray("kept"));
        QVERIFY(QFile::exists(QDir(out).filePath("inside/ok.json")));
        const QJsonObject manifest = manifestOf(out);
        QCOMPARE(manifest["written"].toInt(), 1);
        QCOMPARE(manifest["failed"].toInt(), 3);
        QCOMPARE(manifest["complete"].toBool(), true);
    }

    void helpKeysAreItemErrors()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "a.json", "help": true}, {"type": "ptd", "output": "b.json", "h": true},
                      {"type": "table", "output": "c.csv", "version": true}, {"type": "ptd", "output": "d.json"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 1: 'help' is not an item parameter"), r.err.constData());
        QVERIFY(!r.out.contains("Usage:"));
        QVERIFY(QFile::exists(QDir(out).filePath("d.json")));
        QCOMPARE(manifestOf(out)["failed"].toInt(), 3);
    }

    void controlCharactersAreItemErrors()
    {
        // A NUL or newline in a job's strings would cut or split the one-line error naming the item.
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard"},
            "items": [{"type": "ptd", "output": "a.json", "layout": "text:2\u0000,image:2x2"},
                      {"type": "ptd", "output": "b\n.json", "layout": "text:2,image:2x2"},
                      {"type": "ptd", "output": "c.json", "layout": "text:2,image:2x2"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 1: parameter 'layout' contains a control character\n"), r.err.constData());
        QVERIFY(r.err.contains("item 2: output 'b?.json' contains a control character\n"));
        QCOMPARE(r.err.count('\n'), 2);
        QVERIFY(QFile::exists(QDir(out).filePath("c.json")));
    }

    void outputsTwoItemsShareAreErrors()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        // alpha 0.5 and "0.5" format to one name; manifest.json is the batch's own; the second a.json repeats.
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "circle", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "a.json"}, {"type": "ptd", "output": "./a.json", "alpha": 0.2},
                      {"type": "ptd", "output": "manifest.json"},
                      {"type": "ptd", "output": "s_{alpha}.json", "sweep": {"alpha": [0.5, "0.5"]}}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 2: output 'a.json' is also written by an earlier item"), r.err.constData());
        QVERIFY(r.err.contains("item 3: output 'manifest.json' is the batch's manifest"));
        QVERIFY(r.err.contains("item 4: output 's_0.5.json' is also written"));
        const QJsonObject manifest = manifestOf(out);
        QCOMPARE(manifest["written"].toInt(), 2);
        QCOMPARE(manifest["items"].toArray().size(), 5);
        // a.json holds the first item's PTD (alpha 0.5), not the refused second one's.
        QCOMPARE(QJsonDocument::fromJson(contents(QDir(out).filePath("a.json"))).object()["parameters"].toObject()["alpha"].toDouble(), 0.5);
    }

    void jobsOverTheItemCapAreRefused()
    {
        QTemporaryDir dir;
        QByteArray items;
        for (int i = 0; i <= 100000; ++i)
            items += QByteArray(i ? "," : "") + "{\"type\": \"ptd\"}";
        const QString job = writeFile(dir.filePath("job.json"), "{\"items\": [" + items + "]}");
        const RopescopeRun r = runRopescope({"batch", job, "--output", dir.filePath("out")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("100001 items; a job may list at most 100000") && oneLine(r.err), r.err.constData());
        QVERIFY(!QDir(dir.filePath("out")).exists());
    }

    void fifoInputsAreRefusedAtOnce()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("job.json");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        const RopescopeRun r = runRopescope({"batch", fifo, "--output", dir.filePath("out")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("the job file is not a regular file"), r.err.constData());
    }

    void configValuesOutOfRangeAreOneLine()
    {
        // rope_theta 1e40 used to abort the process from inside LibTorch (float overflow).
        QTemporaryDir dir;
        QFile source(QString(ROPESCOPE_TEST_DATA) + "/../../resources/models/mrope/config.json");
        QVERIFY(source.open(QIODevice::ReadOnly));
        QJsonObject config = QJsonDocument::fromJson(source.readAll()).object();
        config["rope_theta"] = 1e40;
        QJsonObject text = config["text_config"].toObject();
        if (!text.isEmpty()) {
            text["rope_theta"] = 1e40;
            config["text_config"] = text;
        }
        writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
        const RopescopeRun r = runRopescope({"forward", "--model", dir.path(), "--inputs", dir.filePath("none.safetensors"),
                                             "--output", dir.filePath("out.safetensors")}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("'rope_theta' must be a number from 1 to 1e+30") && oneLine(r.err), r.err.constData());
    }

    void hugeTextVectorKeepsItsDirection()
    {
        const QStringList base{"positions", "--scheme", "circle", "--layout", "text:2,image:3x3,text:2"};
        const RopescopeRun unit = runRopescope(base + QStringList{"--text-vector", "1,1,1"});
        const RopescopeRun huge = runRopescope(base + QStringList{"--text-vector", "1e308,1e308,1e308"});
        QCOMPARE(huge.exitCode, 0);
        QCOMPARE(huge.out, unit.out);
    }
};

QTEST_GUILESS_MAIN(TestHostileCli)
#include "test_hostile_cli.moc"

#include "tests/support/test_paths.h"
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/run_ropescope.h"

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out, err;
};

Run ropescope(const QStringList& args)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("DISPLAY"); // batch needs no display
    p.setProcessEnvironment(env);
    p.start(ROPESCOPE_BINARY, args);
    if (!p.waitForFinished(300000))
        return {};
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

QString writeJob(const QTemporaryDir& dir, const QByteArray& json)
{
    const QString path = dir.filePath("job.json");
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write(json);
    return path;
}

const char* kJob = R"({
  "defaults": {"layout": "text:4,image:6x6,text:4", "scheme": "circle"},
  "items": [
    {"type": "cone", "output": "cone.png", "resolution": "320x240", "cone": true},
    {"type": "ptd-chart", "output": "charts/ptd.svg"},
    {"type": "prior-heatmap", "output": "prior.pdf", "select": 2},
    {"type": "table", "scheme": "vrope", "output": "vrope.csv"},
    {"type": "ptd", "scheme": "hard", "output": "hard.json"},
    {"type": "cone", "output": "bad_alpha.png", "alpha": 5},
    {"type": "conee", "output": "typo.png"},
    {"type": "table", "output": "../escape.csv"},
    {"type": "ptd", "output": "sweep/r_{radius}.json", "sweep": {"radius": [2, 5, 10], "text-vector": ["1,1,1", "1,1,2"]}}
  ]
})";

} // namespace

class TestBatch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runsItemsAndReportsBadOnes()
    {
        QTemporaryDir dir;
        const QString job = writeJob(dir, kJob);
        const QString out = dir.filePath("out");
        const Run r = ropescope({"batch", job, "--output", out});
        QCOMPARE(r.exitCode, 1);                // some items failed, the rest ran
        QCOMPARE(r.out.count("\n"), 5 + 6 + 1); // 5 good items + 6 sweep points, then the summary
        QVERIFY2(r.err.contains("item 6: --alpha: must be in [0, 1]"), r.err.constData());
        QVERIFY(r.err.contains("item 7: unknown type 'conee'"));
        QVERIFY(r.err.contains("item 8: output '../escape.csv' must be a relative path"));
        QVERIFY(!QFile::exists(dir.filePath("escape.csv")));
        QVERIFY(!QFile::exists(QDir(out).filePath("bad_alpha.png")));

        QCOMPARE(QImage(QDir(out).filePath("cone.png")).size(), QSize(320, 240));
        QFile svg(QDir(out).filePath("charts/ptd.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly) && svg.readAll().contains("<svg"));
        QFile pdf(QDir(out).filePath("prior.pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly) && pdf.readAll().startsWith("%PDF"));
        QFile csv(QDir(out).filePath("vrope.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly) && csv.readLine().startsWith("index,modality,segment,frame,row,col,p0,p1,p2,p3"));
        QFile hard(QDir(out).filePath("hard.json"));
        QVERIFY(hard.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(hard.readAll()).object()["ptd"].toDouble(), 9.0); // 36 tokens: 36/4
        for (const char* name : {"r_2_text-vector-1-1-1.json", "r_10_text-vector-1-1-2.json"})
            QVERIFY2(QFile::exists(QDir(out).filePath(QString("sweep/") + name)), name);

        QFile manifestFile(QDir(out).filePath("manifest.json"));
        QVERIFY(manifestFile.open(QIODevice::ReadOnly));
        const QJsonObject manifest = QJsonDocument::fromJson(manifestFile.readAll()).object();
        QCOMPARE(manifest["written"].toInt(), 11);
        QCOMPARE(manifest["failed"].toInt(), 3);
        const QJsonArray items = manifest["items"].toArray();
        QCOMPARE(items.size(), 14);
        QCOMPARE(items[0].toObject()["status"].toString(), QString("ok"));
        QCOMPARE(items[0].toObject()["parameters"].toObject()["layout"].toString(), QString("text:4,image:6x6,text:4"));
        QCOMPARE(items[5].toObject()["status"].toString(), QString("error"));
    }

    void frequencyItems()
    {
        QTemporaryDir dir;
        const QString job = writeJob(dir, R"({"defaults": {"layout": "text:2,image:8x8", "scheme": "mrope"},
            "items": [{"type": "freqs", "output": "f.csv"}, {"type": "freqs", "output": "f.png", "resolution": "600x400"},
                      {"type": "freqs", "output": "f.txt"}]})");
        const QString out = dir.filePath("out");
        const Run r = ropescope({"batch", job, "--output", out});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 3: --output: freqs writes .csv, .json, .png, .svg or .pdf"), r.err.constData());
        QFile csv(QDir(out).filePath("f.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly) && csv.readAll().count('\n') == 65);
        QCOMPARE(QImage(QDir(out).filePath("f.png")).size(), QSize(600, 400));
    }

    void shardsSplitTheWork()
    {
        QTemporaryDir dir;
        const QString job = writeJob(dir, R"({"defaults": {"layout": "text:2,image:3x3,text:2", "scheme": "mrope"},
            "items": [{"type": "ptd", "output": "a_{alpha}.json", "sweep": {"alpha": {"from": 0, "to": 1, "step": 0.2}}}]})");
        const QString out = dir.filePath("out");
        const Run a = ropescope({"batch", job, "--output", out, "--shard", "0/2"});
        const Run b = ropescope({"batch", job, "--output", out, "--shard", "1/2"});
        QCOMPARE(a.exitCode, 0);
        QCOMPARE(b.exitCode, 0);
        QCOMPARE(QDir(out).entryList({"a_*.json"}).size(), 6);
        QVERIFY(QFile::exists(QDir(out).filePath("manifest.shard-0-of-2.json")));
        QVERIFY(QFile::exists(QDir(out).filePath("manifest.shard-1-of-2.json")));
        QVERIFY(a.out.contains("batch: 3 written"));
        QCOMPARE(ropescope({"batch", job, "--output", out, "--shard", "2/2"}).exitCode, 2);
    }

    void unreadableJobsExitTwo()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        const Run notJson = ropescope({"batch", writeJob(dir, "{\"items\": [ {"), "--output", out});
        QCOMPARE(notJson.exitCode, 2);
        QVERIFY(notJson.err.contains("job.json: not JSON"));
        QCOMPARE(QString(notJson.err).trimmed().count('\n'), 0);
        const Run noItems = ropescope({"batch", writeJob(dir, "{\"items\": []}"), "--output", out});
        QCOMPARE(noItems.exitCode, 2);
        QCOMPARE(ropescope({"batch", dir.filePath("missing.json"), "--output", out}).exitCode, 2);
        QVERIFY(!QDir(out).exists());
    }
};

QTEST_GUILESS_MAIN(TestBatch)
#include "test_batch.moc"

#include "core/geometry/scheme.h"
#include "core/io/atomic_file.h"
#include "core/io/position_table_io.h"
#include "tests/support/csv_table.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using namespace ropescope;
using namespace ropescope::geometry;

class TestPositionIo : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void numbersRoundTrip()
    {
        QCOMPARE(io::formatNumber(3.0), QByteArray("3"));
        QCOMPARE(io::formatNumber(0.1), QByteArray("0.1"));
        QCOMPARE(io::formatNumber(-0.0), QByteArray("0"));
        const double x = 9.071067811865476;
        QCOMPARE(io::formatNumber(x).toDouble(), x);
    }

    void csvFollowsTheContract()
    {
        SchemeParams p;
        p.kind = SchemeKind::Circle;
        const PositionTable t = buildPositionTable(parseLayout("text:1,video:2x1x2,text:1"), p);
        const CsvTable csv = CsvTable::fromText(io::positionTableCsv(t));
        QCOMPARE(csv.header, QString("index,modality,segment,frame,row,col,p0,p1,p2").split(','));
        QCOMPARE(csv.rows.size(), 6);
        QCOMPARE(csv.rows[0], QString("0,text,0,,,,0,0,0").split(','));
        QCOMPARE(csv.rows[4][1], QString("video"));
        QCOMPARE(csv.rows[4][3], QString("1")); // token 4: frame 1, row 0, col 1
        QCOMPARE(csv.rows[4][4], QString("0"));
        QCOMPARE(csv.rows[4][5], QString("1"));
        for (int i = 0; i < t.size(); ++i)
            for (int c = 0; c < 3; ++c)
                QCOMPARE(csv.rows[i][6 + c].toDouble(), t.positions(i, c)); // exact round trip
    }

    void jsonRecordsEverything()
    {
        SchemeParams p;
        p.kind = SchemeKind::Vrope;
        const PositionTable t = buildPositionTable(parseLayout("text:2,image:2x2,text:1"), p);
        const QJsonObject root = QJsonDocument::fromJson(io::positionTableJson(t, io::schemeParamsJson(p))).object();
        QCOMPARE(root["scheme"].toString(), QString("vrope"));
        QCOMPARE(root["layout"].toString(), QString("text:2,image:2x2,text:1"));
        QCOMPARE(root["allocation"].toObject()["kind"].toString(), QString("interleaved"));
        QCOMPARE(root["component_names"].toArray().size(), 4);
        QCOMPARE(root["parameters"].toObject()["head_dim"].toInt(), 128);
        const QJsonArray tokens = root["tokens"].toArray();
        QCOMPARE(tokens.size(), 7);
        QVERIFY(tokens[0].toObject()["row"].isNull());
        const QJsonObject img = tokens[3].toObject(); // row 0, col 1
        QCOMPARE(img["modality"].toString(), QString("image"));
        QCOMPARE(img["col"].toInt(), 1);
        const QJsonArray pos = img["p"].toArray();
        QCOMPARE(pos.size(), 4);
        for (int c = 0; c < 4; ++c)
            QCOMPARE(pos[c].toDouble(), t.positions(3, c));
    }

    void atomicWriteFailsCleanly()
    {
        QTemporaryDir dir;
        const QString bad = dir.filePath("missing/sub/out.csv");
        try {
            io::writeFileAtomically(bad, "x");
            QFAIL("no error");
        } catch (const io::IoError& e) {
            QVERIFY(QString(e.what()).contains(bad));
        }
        QVERIFY(!QFile::exists(bad));
        const QString good = dir.filePath("out.csv");
        io::writeFileAtomically(good, "hello");
        QFile f(good);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("hello"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"out.csv"}); // no temp file left
    }
};

QTEST_GUILESS_MAIN(TestPositionIo)
#include "test_position_io.moc"

#include "core/geometry/scheme.h"
#include "core/io/atomic_file.h"
#include "core/io/position_table_io.h"
#include "core/io/torch_save.h"
#include "tests/support/csv_table.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QElapsedTimer>
#include <QtTest>

#include <cstring>

using namespace ropescope;
using namespace ropescope::geometry;

namespace {

QByteArray le32(uint32_t v)
{
    QByteArray b(4, '\0');
    std::memcpy(b.data(), &v, 4);
    return b;
}

QByteArray unicode(const QByteArray& s) // BINUNICODE
{
    return "X" + le32(static_cast<uint32_t>(s.size())) + s;
}

// torch.save's legacy form of a dict {key_i: FloatStorage of 0 elements} with `count` storages whose keys share a
// long prefix (each comparison of two keys reads it). Memo entries 0-3 hold 'storage', the storage type, 'cpu' and
// 0 (put by the first persistent id); entry 4 + i the key of storage i.
QByteArray legacyFileOfStorages(int count)
{
    const QByteArray prefix(100, 'k');
    auto key = [&](int i) { return prefix + QByteArray::number(1000000 + i); };
    QByteArray f("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15); // the magic number
    f += QByteArray("\x80\x02M\xe9\x03.", 6);                                      // protocol 1001
    f += "\x80\x02}(" + unicode("little_endian") + "\x88u.";                       // system information
    f += "\x80\x02}(";
    for (int i = 0; i < count; ++i) {
        f += unicode(key(i)) + "r" + le32(4 + i) + "(";
        if (i == 0) // the persistent id's constant parts, memoized as the first one names them
            f += unicode("storage") + "r" + le32(0) + "ctorch\nFloatStorage\nr" + le32(1) + "j" + le32(4) + unicode("cpu") + "r" + le32(2) +
                "K" + QByteArray(1, '\0') + "r" + le32(3);
        else
            f += "j" + le32(0) + "j" + le32(1) + "j" + le32(4 + i) + "j" + le32(2) + "j" + le32(3);
        f += "tQ";
    }
    f += "u.";
    f += "\x80\x02(";
    for (int i = 0; i < count; ++i)
        f += unicode(key(i));
    f += "l.";
    f += QByteArray(8 * count, '\0'); // each storage: its element count (0), no bytes
    return f;
}

} // namespace

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

    // The legacy form's list of storages is matched to the storages by the pickle machine's map, not by comparing
    // each key with every storage (20,000 storages in a 5 MB file were 4 x 10^8 comparisons of 107-byte keys,
    // seconds; a hostile file could hold more). The bound is loose: the map takes milliseconds.
    void legacyStorageListIsMatchedByKey()
    {
        const QByteArray file = legacyFileOfStorages(20000);
        QElapsedTimer timer;
        timer.start();
        const auto tensors = io::readTorchSave(
            file, [](const std::string&) { return true; }, 1000);
        const qint64 ms = timer.elapsed();
        QVERIFY(tensors.empty()); // the dict holds storages, no tensors
        QVERIFY2(ms < 1000, qPrintable(QString("%1 ms").arg(ms)));
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

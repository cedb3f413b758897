// The 2025 schemes (VideoRoPE, HoPE, V2PE, OmniRoPE, ILRoPE, MRoPE-I with spatial reset) against tests/data/schemes2025/make_reference.py: positions
// written from the reference library's get_*_index semantics, walked block by block in Python, and its
// frequency allocation tables.
#include "csv_table.h"
#include "geometry/errors.h"
#include "geometry/layout.h"
#include "geometry/scheme.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QtTest>

using namespace ropescope::geometry;

class TestSchemes2025 : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void positionsMatchReference_data()
    {
        QTest::addColumn<QString>("file");
        const QDir dir(ROPESCOPE_TEST_DATA "/schemes2025");
        const QStringList files = dir.entryList({"*.csv"});
        QVERIFY(files.size() >= 55);
        for (const QString& f : files)
            QTest::newRow(qPrintable(f)) << dir.filePath(f);
    }
    void positionsMatchReference()
    {
        QFETCH(QString, file);
        const CsvTable ref = CsvTable::fromFile(file);
        static const QRegularExpression re("scheme=(\\S+) layout=(\\S+) (temporal|visual)-stride=(\\S+)");
        const auto m = re.match(ref.comment);
        QVERIFY2(m.hasMatch(), qPrintable(ref.comment));
        SchemeParams p;
        p.kind = *schemeFromName(m.captured(1).toStdString());
        if (m.captured(3) == "temporal")
            p.temporalStride = m.captured(4).toDouble();
        else
            p.visualStride = m.captured(4).toDouble();
        const PositionTable t = buildPositionTable(parseLayout(m.captured(2).toStdString()), p);
        QCOMPARE(t.size(), ref.rows.size());
        QCOMPARE(t.components(), ref.header.size() - 6);
        for (int i = 0; i < t.size(); ++i) {
            const QStringList& row = ref.rows[i];
            QCOMPARE(row[1], QString(modalityName(t.modality[size_t(i)])));
            for (int c = 0; c < t.components(); ++c)
                QVERIFY2(std::abs(t.positions(i, c) - row[6 + c].toDouble()) < 1e-9,
                         qPrintable(QString("token %1 component %2: %3 vs %4").arg(i).arg(c).arg(t.positions(i, c)).arg(row[6 + c])));
        }
    }

    void allocationsMatchReference()
    {
        QFile f(ROPESCOPE_TEST_DATA "/schemes2025/allocations.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject all = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(all.size(), 5);
        for (auto it = all.begin(); it != all.end(); ++it) {
            // "<allocation> <head_dim> [t,h,w]", each checked as the scheme whose design it is
            const QStringList parts = it.key().split(' ');
            const int headDim = parts[1].toInt();
            std::vector<int> sections;
            for (const QString& s : parts[2].mid(1, parts[2].size() - 2).split(','))
                sections.push_back(s.toInt());
            SchemeParams p;
            p.kind = parts[0] == "hw-alternating" ? SchemeKind::VideoRope : SchemeKind::IlRope;
            p.rotary.headDim = headDim;
            p.sections = sections;
            const std::vector<int> ours = allocationFor(p).componentTable(headDim / 2);
            const QJsonArray want = it.value().toArray();
            QCOMPARE(int(ours.size()), int(want.size()));
            for (int j = 0; j < want.size(); ++j)
                QVERIFY2(ours[size_t(j)] == want[j].toInt(), qPrintable(QString("%1 pair %2").arg(it.key()).arg(j)));
        }
        // The default sections at head_dim 128 are [16,24,24]: h 24 pairs (odd, 1..47), w 23 (even, 2..46), t 17.
        SchemeParams p;
        p.kind = SchemeKind::Hope;
        const std::vector<int> table = allocationFor(p).componentTable(64);
        QCOMPARE(std::count(table.begin(), table.end(), 1), 24L);
        QCOMPARE(std::count(table.begin(), table.end(), 2), 23L);
        QCOMPARE(std::count(table.begin(), table.end(), 0), 17L);
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("hw-alternating[16,24,24]"));
        p.kind = SchemeKind::OmniRope;
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("sectioned[16,24,24]"));
        p.kind = SchemeKind::IlRope;
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("interleaved-mrope[24,20,20]"));
    }

    void parametersAreChecked()
    {
        SchemeParams p;
        p.kind = SchemeKind::VideoRope;
        p.temporalStride = -1;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.temporalStride.reset();
        QCOMPARE(p.temporalStrideOrDefault(), 2.0);
        p.kind = SchemeKind::Hope;
        QCOMPARE(p.temporalStrideOrDefault(), 1.0);
        p.kind = SchemeKind::V2pe;
        p.visualStride = 0;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        // hw-alternating needs three axes and h, w within every other pair.
        p = SchemeParams{};
        p.kind = SchemeKind::Vrope;
        p.allocationKind = FrequencyAllocation::Kind::HwAlternating;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.kind = SchemeKind::Mrope;
        p.sections = {0, 40, 24};
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
    }
};

QTEST_APPLESS_MAIN(TestSchemes2025)
#include "test_schemes_2025.moc"

// The 2025 schemes (VideoRoPE, HoPE, V2PE, OmniRoPE, ILRoPE, MRoPE-I with and without spatial reset, MHRoPE,
// TAD-RoPE, VideoRoPE++, MM-RoPE) against tests/data/schemes2025/make_reference.py: positions
// written from the reference library's get_*_index semantics, walked block by block in Python, and its
// frequency allocation tables.
#include "tests/support/test_paths.h"
#include "core/geometry/errors.h"
#include "core/geometry/layout.h"
#include "core/geometry/metrics.h"
#include "core/geometry/scheme.h"
#include "tests/support/csv_table.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QtTest>

using namespace ropescope::geometry;

namespace {

QJsonObject referenceJson(const char* name)
{
    QFile f(QString(ROPESCOPE_TEST_DATA + "/schemes2025/") + name);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

} // namespace

class TestSchemes2025 : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void positionsMatchReference_data()
    {
        QTest::addColumn<QString>("file");
        const QDir dir(ROPESCOPE_TEST_DATA + "/schemes2025");
        const QStringList files = dir.entryList({"*.csv"});
        QVERIFY(files.size() >= 90);
        for (const QString& f : files)
            QTest::newRow(qPrintable(f)) << dir.filePath(f);
    }
    void positionsMatchReference()
    {
        QFETCH(QString, file);
        const CsvTable ref = CsvTable::fromFile(file);
        static const QRegularExpression re("scheme=(\\S+) layout=(\\S+)((?: \\S+=\\S+)*)$");
        const auto m = re.match(ref.comment);
        QVERIFY2(m.hasMatch(), qPrintable(ref.comment));
        SchemeParams p;
        p.kind = *schemeFromName(m.captured(1).toStdString());
        for (const QString& setting : m.captured(3).split(' ', Qt::SkipEmptyParts)) {
            const QString key = setting.section('=', 0, 0), value = setting.section('=', 1);
            if (key == "video")
                p.videoForm = videoFormFromName(value.toStdString()).value();
            else if (key == "temporal-stride")
                p.temporalStride = value.toDouble();
            else if (key == "visual-stride")
                p.visualStride = value.toDouble();
            else if (key == "ntk-factor")
                p.ntkFactor = value.toDouble();
            else if (key == "position-scale") {
                const QStringList v = value.split(',');
                p.positionScale = Eigen::Vector3d(v[0].toDouble(), v[1].toDouble(), v[2].toDouble());
            } else
                QFAIL(qPrintable("unknown setting in " + ref.comment));
        }
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
        const QJsonObject all = referenceJson("allocations.json");
        QCOMPARE(all.size(), 9);
        for (auto it = all.begin(); it != all.end(); ++it) {
            // "<allocation> <head_dim> [t,h,w]" (per-head: "<heads> [t,h,w]"), each checked as the scheme whose
            // design it is
            const QStringList parts = it.key().split(' ');
            std::vector<int> sections;
            for (const QString& s : parts[2].mid(1, parts[2].size() - 2).split(',', Qt::SkipEmptyParts))
                sections.push_back(s.toInt());
            SchemeParams p;
            p.kind = parts[0] == "hw-alternating" ? SchemeKind::VideoRope
                : parts[0] == "distributed"       ? SchemeKind::MmRope
                : parts[0] == "per-head"          ? SchemeKind::Mhrope
                                                  : SchemeKind::IlRope;
            const bool perHead = p.kind == SchemeKind::Mhrope;
            (perHead ? p.rotary.heads : p.rotary.headDim) = parts[1].toInt();
            p.sections = sections;
            const FrequencyAllocation a = allocationFor(p);
            QCOMPARE(QString(allocationKindName(a.kind)), parts[0]);
            const std::vector<int> ours = perHead ? a.headComponents(p.rotary.heads) : a.componentTable(p.rotary.halfDim());
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
        p.kind = SchemeKind::MropeI;
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("interleaved-mrope[24,20,20]"));
        p.kind = SchemeKind::Mhrope;
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("per-head[2,3,3]"));
        p.kind = SchemeKind::MmRope;
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("distributed(TTHWHWHW)"));
    }

    void omniRopeResumesAfterTheLastFrame()
    {
        // The reference's get_omnirope_index (cd413b9) for one 5-frame video of 2x2 cells at delta 2, by its
        // formula: text 0, 1; frame f at t = 2 + 2f with h, w restarting at 0; the text after at
        // 2 + max((5 - 1) * 2 + 1, 2, 2) = 11, 12. It resumed at 2 + max(5, 2, 2) = 7, before frames 3 and 4.
        for (const SchemeKind kind : {SchemeKind::OmniRope, SchemeKind::IlRope}) {
            SchemeParams p;
            p.kind = kind;
            p.temporalStride = 2;
            const PositionTable t = buildPositionTable(parseLayout("text:2,video:5x2x2,text:2"), p);
            QCOMPARE(t.size(), 24);
            for (int c = 0; c < 3; ++c) {
                QCOMPARE(t.positions(0, c), 0.0);
                QCOMPARE(t.positions(1, c), 1.0);
                QCOMPARE(t.positions(22, c), 11.0);
                QCOMPARE(t.positions(23, c), 12.0);
            }
            for (int f = 0; f < 5; ++f)
                for (int cell = 0; cell < 4; ++cell) {
                    const int token = 2 + f * 4 + cell;
                    QCOMPARE(t.positions(token, 0), 2.0 + 2.0 * f);
                    QCOMPARE(t.positions(token, 1), double(cell / 2));
                    QCOMPARE(t.positions(token, 2), double(cell % 2));
                }
        }
    }

    void mhropeNeedsAnHeadForEachAxis()
    {
        // --kv-heads 2 split as [2, 0, 0]: no head turned by h or w. Refused, naming why; 3 heads give [1, 1, 1].
        SchemeParams p;
        p.kind = SchemeKind::Mhrope;
        p.rotary.heads = 2;
        try {
            validate(p);
            QFAIL("2 heads accepted");
        } catch (const InvalidInput& e) {
            QVERIFY2(QString(e.what()).contains("leaves no head turning by h or w"), e.what());
        }
        p.rotary.heads = 3;
        validate(p);
        QCOMPARE(QString::fromStdString(allocationFor(p).toString()), QString("per-head[1,1,1]"));
    }

    void timeThetaMatchesReference()
    {
        // VideoRoPE++: only the time axis' pairs move to the NTK-scaled base.
        const QJsonObject all = referenceJson("time_theta.json");
        QCOMPARE(all.size(), 2);
        for (auto it = all.begin(); it != all.end(); ++it) {
            const QStringList parts = it.key().split(' '); // "videorope++ <theta> <head_dim> <factor>"
            SchemeParams p;
            p.kind = SchemeKind::VideoRopePlus;
            p.rotary.theta = parts[1].toDouble();
            p.rotary.headDim = parts[2].toInt();
            p.ntkFactor = parts[3].toDouble();
            const FrequencyAllocation a = allocationFor(p);
            QVERIFY(std::abs(p.rotary.theta * a.temporalThetaScale / it.value().toDouble() - 1) < 1e-12);
            for (const RotaryChannel& ch : rotaryChannels(p.rotary, a)) {
                const double theta = ch.component == 0 ? it.value().toDouble() : p.rotary.theta;
                QVERIFY(std::abs(ch.invFreq / std::pow(theta, -2.0 * ch.pair / p.rotary.headDim) - 1) < 1e-12);
            }
        }
    }

    void perHeadPriorIsTheMeanOverHeads()
    {
        // MHRoPE's prior of a text token over the image = the mean over heads of each head's one-axis prior
        // (heads without rotary contribute their constant d).
        SchemeParams p;
        p.kind = SchemeKind::Mhrope;
        p.rotary.heads = 10; // [2,3,3] leaves 2 heads without rotary
        p.sections = {2, 3, 3};
        const Layout layout = parseLayout("text:3,image:4x5,text:2");
        const PositionTable mh = buildPositionTable(layout, p);
        PositionTable one = mh;
        std::vector<Eigen::VectorXd> perAxis;
        for (int axis = 0; axis < 3; ++axis) {
            std::vector<int> s(3, 0);
            s[size_t(axis)] = 64;
            one.allocation = FrequencyAllocation::sectioned(s);
            perAxis.push_back(positionalPrior(one, 24).values);
        }
        const Eigen::VectorXd expected = (2 * perAxis[0] + 3 * perAxis[1] + 3 * perAxis[2]).array() / 10.0 + 2.0 * 128 / 10.0;
        const Eigen::VectorXd got = positionalPrior(mh, 24).values;
        QVERIFY((got - expected).cwiseAbs().maxCoeff() < 1e-9);
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
        // Per-head sections count heads, at most --kv-heads of them; the new parameters have their ranges.
        p = SchemeParams{};
        p.kind = SchemeKind::Mhrope;
        p.sections = {3, 3, 3};
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.rotary.heads = 9;
        validate(p);
        p = SchemeParams{};
        p.kind = SchemeKind::MmRope;
        p.positionScale = Eigen::Vector3d(4, -1, 8);
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.kind = SchemeKind::VideoRopePlus;
        p.positionScale = Eigen::Vector3d(4, 8, 8);
        p.ntkFactor = 0.5;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.ntkFactor = 2;
        p.rotary.headDim = 2;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        // Per-head and distributed need the three axes.
        p = SchemeParams{};
        p.kind = SchemeKind::TadRope;
        QCOMPARE(componentCount(p.kind), 1);
        p.kind = SchemeKind::Vrope;
        p.allocationKind = FrequencyAllocation::Kind::PerHead;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
        p.allocationKind = FrequencyAllocation::Kind::Distributed;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
    }
};

QTEST_APPLESS_MAIN(TestSchemes2025)
#include "test_schemes_2025.moc"

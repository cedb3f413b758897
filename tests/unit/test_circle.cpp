#include "tests/support/test_paths.h"
#include "core/geometry/circle_projection.h"
#include "core/geometry/metrics.h"
#include "core/geometry/scheme.h"
#include "tests/support/csv_table.h"

#include <QDir>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QtTest>

using namespace ropescope::geometry;

namespace {

PositionTable circle(const char* layout, double alpha = 0.5, double radius = 10.0, RadiusMode mode = RadiusMode::Fixed,
                     Eigen::Vector3d vector = {1, 1, 1})
{
    SchemeParams p;
    p.kind = SchemeKind::Circle;
    p.circle.alpha = alpha;
    p.circle.radius = radius;
    p.circle.radiusMode = mode;
    p.circle.textVector = vector;
    return buildPositionTable(parseLayout(layout), p);
}

// (t,h,w) position minus the ring centre, reordered to the (w,h,t) order of the text vector.
Eigen::Vector3d offsetWht(const PositionTable& t, int token, double centre)
{
    return {t.positions(token, 2) - centre, t.positions(token, 1) - centre, t.positions(token, 0) - centre};
}

} // namespace

class TestCircle : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Values from tests/data/circle/make_reference.py: the paper's Appendix C pseudocode and the official
    // code's get_rope_index semantics, computed independently in Python.
    void matchesReference_data()
    {
        QTest::addColumn<QString>("file");
        const QDir dir(ROPESCOPE_TEST_DATA + "/circle");
        const QStringList files = dir.entryList({"*.csv"});
        QVERIFY(files.size() >= 5);
        for (const QString& f : files)
            QTest::newRow(qPrintable(f)) << dir.filePath(f);
    }
    void matchesReference()
    {
        QFETCH(QString, file);
        const CsvTable ref = CsvTable::fromFile(file);
        QVERIFY(!ref.rows.isEmpty());
        static const QRegularExpression re("layout=(\\S+) alpha=(\\S+) radius=(\\S+) text-vector=(\\S+),(\\S+),(\\S+) stride=(\\S+)");
        const auto m = re.match(ref.comment);
        QVERIFY2(m.hasMatch(), qPrintable(ref.comment));
        SchemeParams p;
        p.kind = SchemeKind::Circle;
        p.circle.alpha = m.captured(2).toDouble();
        const QString radius = m.captured(3);
        p.circle.radiusMode = radius.startsWith("code-auto") ? RadiusMode::AutoCode
            : radius.startsWith("auto")                      ? RadiusMode::AutoPaper
                                                             : RadiusMode::Fixed;
        p.circle.radius = radius.split('-').last().toDouble();
        p.circle.textVector = {m.captured(4).toDouble(), m.captured(5).toDouble(), m.captured(6).toDouble()};
        p.circle.stride = m.captured(7).toDouble();
        const PositionTable t = buildPositionTable(parseLayout(m.captured(1).toStdString()), p);

        QCOMPARE(t.size(), ref.rows.size());
        for (int i = 0; i < t.size(); ++i) {
            const QStringList& row = ref.rows[i];
            QCOMPARE(row[1], QString(modalityName(t.modality[size_t(i)])));
            if (!t.isText(i)) {
                QCOMPARE(row[3].toInt(), t.frame[size_t(i)]);
                QCOMPARE(row[4].toInt(), t.row[size_t(i)]);
                QCOMPARE(row[5].toInt(), t.col[size_t(i)]);
            }
            for (int c = 0; c < 3; ++c)
                QVERIFY2(std::abs(t.positions(i, c) - row[6 + c].toDouble()) < 1e-9,
                         qPrintable(QString("token %1 p%2: %3 vs %4").arg(i).arg(c).arg(t.positions(i, c), 0, 'g', 17).arg(row[6 + c])));
        }
    }

    void invariantsOnRandomGrids()
    {
        QRandomGenerator rng(20261121);
        for (int trial = 0; trial < 300; ++trial) {
            const int H = rng.bounded(1, 41), W = rng.bounded(1, 41);
            const double alpha = rng.generateDouble();
            const double R = 0.1 + 50.0 * rng.generateDouble();
            const int before = rng.bounded(1, 20), after = rng.bounded(1, 20);
            const std::string layout = "text:" + std::to_string(before) + ",image:" + std::to_string(H) + "x" + std::to_string(W) +
                ",text:" + std::to_string(after);
            const Eigen::Vector3d vector(rng.generateDouble() - 0.5, rng.generateDouble() - 0.5, rng.generateDouble() - 0.5);

            // Any text vector: each token exactly R from (c,c,c), in the plane orthogonal to the vector.
            const PositionTable tilted = circle(layout.c_str(), alpha, R, RadiusMode::Fixed, vector);
            const double c = before;
            for (int i = before; i < before + H * W; ++i) {
                const Eigen::Vector3d off = offsetWht(tilted, i, c);
                QVERIFY2(std::abs(off.norm() - R) < 1e-9, qPrintable(QString("trial %1 token %2").arg(trial).arg(i)));
                QVERIFY(std::abs(off.dot(vector.normalized())) < 1e-9);
            }

            // The default text vector (1,1,1) is the text axis: every text token is equidistant, PTD 0.
            const PositionTable cone = circle(layout.c_str(), alpha, R);
            const PtdResult ptd = computePtd(cone);
            QVERIFY2(ptd.perToken.cwiseAbs().maxCoeff() < 1e-9, qPrintable(QString("trial %1 %2").arg(trial).arg(layout.c_str())));
            // Text resumes at max + 1 over all components of the ring.
            const double ringMax = cone.positions.middleRows(before, H * W).maxCoeff();
            QCOMPARE(cone.positions(before + H * W, 0), ringMax + 1);
        }
    }

    void distancesFromNeighbouringText()
    {
        // Text before the image sits at (c-1)(1,1,1): sqrt(3 + R^2) from every image token.
        const double R = 10;
        const PositionTable t = circle("text:4,image:8x8,text:6", 0.5, R);
        const DistanceProfile before = distanceProfile(t, 3);
        QVERIFY(std::abs(before.min - std::sqrt(3 + R * R)) < 1e-9);
        QVERIFY(std::abs(before.max - before.min) < 1e-9);
        // The text after resumes at max+1, further than the text before: the asymmetry the profile shows.
        const DistanceProfile after = distanceProfile(t, 68);
        QVERIFY(after.min > before.min + 1);
        QVERIFY(std::abs(after.stddev) < 1e-9);
    }

    void multiImageRingsHaveTheirOwnCentres()
    {
        const PositionTable t = circle("text:2,image:3x3,text:1,image:2x2,text:1");
        const double c1 = 2;
        const double c2 = t.positions(11, 0); // the text token after image 1 = max + 1, then image 2 starts there + 1
        for (int i = 2; i < 11; ++i)
            QVERIFY(std::abs(offsetWht(t, i, c1).norm() - 10) < 1e-9);
        for (int i = 12; i < 16; ++i)
            QVERIFY(std::abs(offsetWht(t, i, c2 + 1).norm() - 10) < 1e-9);
        const PtdResult ptd = computePtd(t);
        QCOMPARE(ptd.perBlock.size(), size_t(2));
        QVERIFY(ptd.mean < 1e-9);
    }

    void videoFramesStepAlongTheTextAxis()
    {
        SchemeParams p;
        p.kind = SchemeKind::Circle;
        p.circle.stride = 2.5;
        const PositionTable t = buildPositionTable(parseLayout("text:2,video:3x2x2,text:1"), p);
        for (int f = 0; f < 3; ++f)
            for (int k = 0; k < 4; ++k)
                QVERIFY(std::abs(offsetWht(t, 2 + 4 * f + k, 2 + 2.5 * f).norm() - 10) < 1e-9);
        // Every frame's ring is orthogonal to the axis, so PTD per frame is still 0.
        QVERIFY(computePtd(t).mean < 1e-9);
    }

    void radiusModes()
    {
        CircleParams p;
        p.radius = 2;
        p.radiusMode = RadiusMode::AutoPaper;
        QVERIFY(std::abs(circleRadius(p, 8, 8) - 2 * std::hypot(3.5, 3.5)) < 1e-12);
        p.radiusMode = RadiusMode::AutoCode;
        QCOMPARE(circleRadius(p, 8, 6), 2 * 3.5);
        p.radiusMode = RadiusMode::Fixed;
        QCOMPARE(circleRadius(p, 8, 6), 2.0);
    }

    void basisIsOrthonormal()
    {
        for (const Eigen::Vector3d& n :
             {Eigen::Vector3d(1, 1, 1), Eigen::Vector3d(0, 0, 1), Eigen::Vector3d(0, 0, -2), Eigen::Vector3d(3, -1, 0.5)}) {
            const PlaneBasis b = planeBasis(n);
            QVERIFY(std::abs(b.u.norm() - 1) < 1e-12 && std::abs(b.v.norm() - 1) < 1e-12);
            QVERIFY(std::abs(b.u.dot(b.v)) < 1e-12);
            QVERIFY(std::abs(b.u.dot(n.normalized())) < 1e-12 && std::abs(b.v.dot(n.normalized())) < 1e-12);
        }
        // The official code's special case along t: v = (0,1,0) even for -t.
        QVERIFY(planeBasis({0, 0, -1}).v.isApprox(Eigen::Vector3d(0, 1, 0)));
    }

    void quirksAreReported()
    {
        // alpha = 1: the extreme angles map to 0 and 2pi and the centre to atan2(0,0): two collisions at 3x3.
        QCOMPARE(visualCrowding(circle("image:3x3,text:1", 1.0)).collisions, 2LL);
        QCOMPARE(visualCrowding(circle("image:3x3,text:1", 0.5)).collisions, 0LL);
        // A fixed R = 10 crowds an 8x8 grid (value from the Python reference).
        const Crowding c = visualCrowding(circle("text:4,image:8x8,text:6"));
        QVERIFY(std::abs(c.minPairDistance - 0.004024451454881112) < 1e-12);
        QCOMPARE(c.collisions, 0LL);
    }
};

QTEST_APPLESS_MAIN(TestCircle)
#include "test_circle.moc"

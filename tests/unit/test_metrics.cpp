#include "core/geometry/errors.h"
#include "core/geometry/metrics.h"
#include "core/geometry/paper_table1.h"
#include "core/geometry/scheme.h"

#include <QtTest>

#include <cmath>

using namespace ropescope::geometry;

namespace {
PositionTable build(SchemeKind kind, const std::string& layout, SchemeParams p = {})
{
    p.kind = kind;
    return buildPositionTable(parseLayout(layout), p);
}
} // namespace

class TestMetrics : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void paperTable1()
    {
        const std::vector<Table1Row> rows = ropescope::geometry::paperTable1();
        QCOMPARE(rows.size(), size_t(5));
        QVERIFY(std::abs(rows[0].ptd - 20.0 / 9.0) < 1e-12); // Hard 2.22
        QVERIFY(std::abs(rows[1].ptd) < 1e-12);              // Unordered 0
        QVERIFY(std::abs(rows[2].ptd - 0.6414) < 5e-5);      // Spatial 0.64
        QVERIFY(std::abs(rows[3].ptd) < 1e-9);               // Circle 0
        QVERIFY(std::abs(rows[4].ptd - 0.4844) < 5e-5);      // Qwen2-VL's real 3-D layout
    }

    void ptdPerBlockAndMean()
    {
        // Hard: image A = 0,1,2, text = 3, image B = 4,5.
        // A: distances 3,2,1 -> MAD 2/3; B: distances 1,2 -> MAD 1/2.
        const PtdResult r = computePtd(build(SchemeKind::Hard, "image:1x3,text:1,image:1x2"));
        QCOMPARE(r.perBlock.size(), size_t(2));
        QVERIFY(std::abs(r.perBlock[0] - 2.0 / 3.0) < 1e-12);
        QVERIFY(std::abs(r.perBlock[1] - 0.5) < 1e-12);
        QVERIFY(std::abs(r.mean - 7.0 / 12.0) < 1e-12);
    }

    void ptdVideoIsPerFrame()
    {
        // Unordered (RoPE-Share): a frame shares one index, so each frame's PTD is 0.
        const PtdResult r = computePtd(build(SchemeKind::Unordered, "text:3,video:4x2x2,text:2"));
        QCOMPARE(r.perBlock.size(), size_t(4));
        QVERIFY(r.mean < 1e-12);
    }

    void ptdLargeLayoutEveryToken()
    {
        // Hard: every text token is outside the 1024-token block, its distances are a shifted 0..1023,
        // whose mean absolute deviation is 1024/4 = 256. Exercises the multi-threaded path.
        const PtdResult r = computePtd(build(SchemeKind::Hard,
                                             "text:410,image:32x32,text:409,image:32x32,text:410,"
                                             "image:32x32,text:409,image:32x32,text:410"));
        QCOMPARE(r.perToken.rows(), Eigen::Index(2048));
        QVERIFY((r.perToken.array() - 256.0).abs().maxCoeff() < 1e-9);
    }

    void ptdPassCarriesEveryProfile()
    {
        for (SchemeKind kind : allSchemes()) {
            const PositionTable t = build(kind, "text:3,image:3x4,text:2,video:2x2x2,text:2");
            const PtdResult r = computePtd(t);
            for (size_t i = 0; i < t.textTokens.size(); ++i) {
                const DistanceProfile p = distanceProfile(t, t.textTokens[i]);
                const auto row = static_cast<Eigen::Index>(i);
                QVERIFY(std::abs(r.profiles(row, 0) - p.min) < 1e-12);
                QVERIFY(std::abs(r.profiles(row, 1) - p.mean) < 1e-12);
                QVERIFY(std::abs(r.profiles(row, 2) - p.max) < 1e-12);
                QVERIFY(std::abs(r.profiles(row, 3) - p.stddev) < 1e-9);
            }
        }
    }

    void distanceProfileValues()
    {
        const PositionTable t = build(SchemeKind::Hard, "image:1x3,text:1,image:1x2");
        const DistanceProfile p = distanceProfile(t, 3); // distances 3,2,1,1,2
        QCOMPARE(p.min, 1.0);
        QCOMPARE(p.max, 3.0);
        QVERIFY(std::abs(p.mean - 1.8) < 1e-12);
        QVERIFY(std::abs(p.stddev - std::sqrt(0.56)) < 1e-12);
        QVERIFY_EXCEPTION_THROWN(distanceProfile(t, 0), InvalidInput); // an image token
    }

    void priorMapOneDimensional()
    {
        SchemeParams p;
        p.rotary.theta = 100;
        p.rotary.headDim = 4; // inv_freq = 1, 0.1
        const PositionTable t = build(SchemeKind::Hard, "image:1x3,text:1", p);
        const PriorMap m = positionalPrior(t, 3);
        QCOMPARE(m.values.size(), Eigen::Index(3));
        for (int i = 0; i < 3; ++i) {
            const double d = 3 - i;
            QVERIFY(std::abs(m.values[i] - (2 * std::cos(d) + 2 * std::cos(0.1 * d))) < 1e-12);
        }
        QVERIFY(std::abs(m.spread - (m.values.maxCoeff() - m.values.minCoeff())) < 1e-15);
    }

    void priorMapSectioned()
    {
        SchemeParams p;
        p.rotary.theta = 1000;
        p.rotary.headDim = 6;
        p.sections = {1, 1, 1}; // j=0 -> t, j=1 -> h, j=2 -> w
        const PositionTable t = build(SchemeKind::Mrope, "text:1,image:2x2,text:1", p);
        // text token 5 at (3,3,3); image token (r=0,c=1) at (1,1,2): delta (2,2,1)
        const PriorMap m = positionalPrior(t, 5);
        const double f1 = std::pow(1000.0, -1.0 / 3.0), f2 = std::pow(1000.0, -2.0 / 3.0);
        QVERIFY(std::abs(m.values[1] - (2 * std::cos(2.0) + 2 * std::cos(f1 * 2) + 2 * std::cos(f2 * 1))) < 1e-12);
    }

    void priorMapInterleavedVrope()
    {
        SchemeParams p;
        p.rotary.theta = 10;
        p.rotary.headDim = 8; // 4 frequencies, j -> component j mod 4
        const PositionTable t = build(SchemeKind::Vrope, "text:1,image:2x3,text:1", p);
        // text 7 at (5,5,5,5); image token 0 at (1,3,2,4): deltas (4,2,3,1)
        const PriorMap m = positionalPrior(t, 7);
        const double deltas[4] = {4, 2, 3, 1};
        double expected = 0;
        for (int j = 0; j < 4; ++j)
            expected += 2 * std::cos(std::pow(10.0, -2.0 * j / 8) * deltas[j]);
        QVERIFY(std::abs(m.values[0] - expected) < 1e-12);
    }

    void priorMapFlatWhenPositionsShared()
    {
        const PriorMap m = positionalPrior(build(SchemeKind::Unordered, "text:2,image:3x3,text:1"), 1);
        QVERIFY(m.spread < 1e-12);
    }

    void crowding()
    {
        QCOMPARE(visualCrowding(build(SchemeKind::Unordered, "text:1,image:3x3")).collisions, 8LL);
        QCOMPARE(visualCrowding(build(SchemeKind::Unordered, "text:1,image:3x3")).minPairDistance, 0.0);
        const Crowding m = visualCrowding(build(SchemeKind::Mrope, "text:1,image:4x5"));
        QCOMPARE(m.collisions, 0LL);
        QCOMPARE(m.minPairDistance, 1.0);
        // Qwen2.5-VL temporal scaling below one index per frame makes frames collide.
        SchemeParams p;
        p.temporal.mode = TemporalParams::Mode::Qwen25VL;
        p.temporal.tokensPerSecond = 0.5;
        QCOMPARE(visualCrowding(build(SchemeKind::Mrope, "text:1,video:3x2x2", p)).collisions, 4LL);
    }

    void metricsNeedBothModalities()
    {
        QVERIFY_EXCEPTION_THROWN(computePtd(build(SchemeKind::Mrope, "image:2x2")), InvalidInput);
        QVERIFY_EXCEPTION_THROWN(computePtd(build(SchemeKind::Mrope, "text:5")), InvalidInput);
    }
};

QTEST_APPLESS_MAIN(TestMetrics)
#include "test_metrics.moc"

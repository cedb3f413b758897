#include "core/geometry/age.h"
#include "core/geometry/errors.h"
#include "core/geometry/frequency.h"
#include "core/geometry/frequency_usage.h"
#include "core/geometry/layout.h"
#include "core/geometry/scheme.h"

#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace ropescope::geometry;

class TestAgeFrequency : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void officialStrategiesAt36Layers()
    {
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_1", 36).pattern()), QString(36, 'C'));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_2", 36).pattern()), QString(18, 'C') + QString(18, 'M'));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_3", 36).pattern()), QString(18, 'M') + QString(18, 'C'));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_4", 36).pattern()), QString("CM").repeated(18));
    }

    void anyLayerCountAndPatterns()
    {
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_2", 5).pattern()), QString("CCCMM"));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_3", 5).pattern()), QString("MMMCC"));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("strategy_4", 3).pattern()), QString("CMC"));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("CCM", 7).pattern()), QString("CCMCCMC"));
        QCOMPARE(QString::fromStdString(parseAgeSchedule("mc", 3).pattern()), QString("MCM"));
        QVERIFY_EXCEPTION_THROWN(parseAgeSchedule("strategy_5", 4), InvalidInput);
        QVERIFY_EXCEPTION_THROWN(parseAgeSchedule("CXM", 4), InvalidInput);
        QVERIFY_EXCEPTION_THROWN(parseAgeSchedule("CM", 0), InvalidInput);
    }

    void layerTablesSwitchScheme()
    {
        SchemeParams circle;
        circle.kind = SchemeKind::Circle;
        const AgeSchedule s = parseAgeSchedule("strategy_4", 4);
        const Layout layout = parseLayout("text:3,image:4x4,text:2");
        const PositionTable layer0 = buildPositionTable(layout, layerParams(circle, s, 0));
        const PositionTable layer1 = buildPositionTable(layout, layerParams(circle, s, 1));
        QCOMPARE(layer0.scheme, SchemeKind::Circle);
        QCOMPARE(layer1.scheme, SchemeKind::Mrope);
        SchemeParams mrope;
        const PositionTable plain = buildPositionTable(layout, mrope);
        QVERIFY(layer1.positions.isApprox(plain.positions));
        QVERIFY_EXCEPTION_THROWN(layerParams(circle, s, 4), InvalidInput);

        // A 4-component scheme's mrope layers fall back to mrope's own allocation.
        SchemeParams vrope;
        vrope.kind = SchemeKind::Vrope;
        vrope.sections = {16, 16, 16, 16};
        vrope.allocationKind = FrequencyAllocation::Kind::Sectioned;
        const SchemeParams m = layerParams(vrope, s, 1);
        QCOMPARE(allocationFor(m).sections, (std::vector<int>{16, 24, 24}));
    }

    void inverseFrequenciesMatchQwen()
    {
        const std::vector<double> f = inverseFrequencies({1e6, 128});
        QCOMPARE(f.size(), size_t(64));
        QCOMPARE(f[0], 1.0);
        QVERIFY(std::abs(f[1] - std::pow(1e6, -2.0 / 128)) < 1e-15);
        QVERIFY(std::abs(f[63] - std::pow(1e6, -126.0 / 128)) < 1e-18);
    }

    // partial_rotary_factor: Qwen3.5 rotates 64 of 256 dims, inv_freq = theta^(-2j/64) for j < 32 (its
    // rotary embedding is built on the rotated dims), and the default sections split those 32 pairs.
    void partialRotaryCoversTheRotatedDims()
    {
        RotaryConfig r{1e7, 256};
        r.partial = 0.25;
        QCOMPARE(r.rotaryDim(), 64);
        QCOMPARE(r.unrotatedDims(), 192);
        const std::vector<double> f = inverseFrequencies(r);
        QCOMPARE(f.size(), size_t(32));
        QVERIFY(std::abs(f[31] - std::pow(1e7, -62.0 / 64)) < 1e-18);
        SchemeParams p;
        p.kind = SchemeKind::Mrope;
        p.rotary = r;
        validate(p);
        QCOMPARE(allocationFor(p).toString(), std::string("sectioned[8,12,12]"));
        p.allocationKind = FrequencyAllocation::Kind::InterleavedMrope;
        QCOMPARE(allocationFor(p).componentTable(32).size(), size_t(32));
        const auto table = buildPositionTable(parseLayout("text:2,image:4x4,text:2"), p);
        QCOMPARE(table.rotary.rotaryDim(), 64);
        // A fraction that leaves no pair, or none at all, names the parameter.
        for (double bad : {0.0, 0.005, 1.5}) {
            p.rotary.partial = bad;
            try {
                validate(p);
                QFAIL("accepted a rotated fraction with no pair");
            } catch (const InvalidInput& e) {
                QCOMPARE(e.parameter(), std::string("partial_rotary"));
            }
        }
    }

    void allocations()
    {
        QCOMPARE(defaultMropeSection(128), (std::vector<int>{16, 24, 24}));
        QCOMPARE(defaultMropeSection(64), (std::vector<int>{8, 12, 12}));
        QCOMPARE(defaultMropeSection(80), (std::vector<int>{10, 15, 15}));
        const FrequencyAllocation s = FrequencyAllocation::sectioned({16, 24, 24});
        QCOMPARE(s.componentOf(15), 0);
        QCOMPARE(s.componentOf(16), 1);
        QCOMPARE(s.componentOf(39), 1);
        QCOMPARE(s.componentOf(40), 2);
        QCOMPARE(s.componentOf(63), 2);
        const FrequencyAllocation i = FrequencyAllocation::interleaved(3);
        QCOMPARE(i.componentTable(7), (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
        // MHRoPE's pairs have no single component: asking is a programming error, not a silent 0.
        const FrequencyAllocation heads = FrequencyAllocation::perHeadAxes({1, 2, 1});
        QVERIFY_EXCEPTION_THROWN(heads.componentOf(0), std::logic_error);
        QCOMPARE(heads.headComponents(5), (std::vector<int>{0, 1, 1, 2, -1}));

        SchemeParams p;
        p.kind = SchemeKind::Circle;
        QCOMPARE(allocationFor(p).toString(), std::string("sectioned[16,24,24]"));
        p.allocationKind = FrequencyAllocation::Kind::Interleaved;
        QCOMPARE(allocationFor(p).toString(), std::string("interleaved(3)"));
        p.kind = SchemeKind::Hard;
        QCOMPARE(allocationFor(p).toString(), std::string("sectioned[64]"));
        p.kind = SchemeKind::Vrope;
        p.allocationKind.reset();
        QCOMPARE(allocationFor(p).toString(), std::string("interleaved(4)"));
    }

    void interleavedMropeIsQwen3VLs()
    {
        // Qwen3-VL, head_dim 128, mrope_section [24,20,20]: t h w repeating over pairs 0..59, then t for the
        // four lowest frequencies (24 t, 20 h, 20 w), unlike plain interleaving's 22/21/21.
        SchemeParams p;
        p.kind = SchemeKind::Mrope;
        p.allocationKind = FrequencyAllocation::Kind::InterleavedMrope;
        const FrequencyAllocation a = allocationFor(p);
        QCOMPARE(a.toString(), std::string("interleaved-mrope[24,20,20]"));
        std::string axes;
        for (int c : a.componentTable(64))
            axes += "thw"[c];
        std::string expected;
        for (int k = 0; k < 20; ++k)
            expected += "thw";
        expected += "tttt";
        QCOMPARE(axes, expected);
        QCOMPARE(std::count(axes.begin(), axes.end(), 't'), 24L);
        QCOMPARE(FrequencyAllocation::interleaved(3).componentTable(64)[63], 0); // plain: 22 t, 21 h, 21 w
        // Scaled to other head dims like Qwen3-VL's 20/64 for h and w; explicit sections are taken as given.
        QCOMPARE(defaultInterleavedMropeSection(64), (std::vector<int>{12, 10, 10}));
        p.sections = {32, 16, 16};
        validate(p);
        QCOMPARE(allocationFor(p).componentTable(64)[46], 1);
        QCOMPARE(allocationFor(p).componentTable(64)[49], 0); // past 3 * 16 = 48: t
        // h or w beyond a third of the pairs cannot be placed; the 1-D and 4-D schemes have no t/h/w.
        p.sections = {4, 30, 30};
        QVERIFY_EXCEPTION_THROWN(validate(p), InvalidInput);
        // Qwen3.5: 64 rotated dims (32 pairs), sections [11, 11, 10]: h takes all 11 pairs 1, 4, ... 31 (one more
        // than a third), w the 10 pairs 2, 5, ... 29, t the other 11, as transformers slices them.
        p.rotary.headDim = 64;
        p.sections = {11, 11, 10};
        validate(p);
        const std::vector<int> q35 = allocationFor(p).componentTable(32);
        QCOMPARE(std::count(q35.begin(), q35.end(), 1), 11L);
        QCOMPARE(std::count(q35.begin(), q35.end(), 2), 10L);
        QCOMPARE(q35[31], 1);
        p.sections = {10, 11, 11}; // w has only 10 pairs
        QVERIFY_EXCEPTION_THROWN(validate(p), InvalidInput);
        p.sections = {9, 12, 11}; // h has only 11
        QVERIFY_EXCEPTION_THROWN(validate(p), InvalidInput);
        p.rotary.headDim = 128;
        p.sections.clear();
        p.kind = SchemeKind::Vrope;
        QVERIFY_EXCEPTION_THROWN(validate(p), InvalidInput);
        QCOMPARE(allocationKindFromName("interleaved-mrope"), std::optional(FrequencyAllocation::Kind::InterleavedMrope));
        QVERIFY(!allocationKindFromName("mrope-i"));
    }

    void frequencyUsageShowsWhatEachAxisResolves()
    {
        // One 8x8 image under M-RoPE (theta 1e6, head_dim 128): h and w span 7 positions, t none. A pair
        // resolves the grid when it turns 0.1 rad to 2 pi across it: inv_freq_j * 7 >= 0.1 means j <= 19, so
        // sectioned [16,24,24] leaves h 4 such pairs (16..19) and w none, while MRoPE-I gives h 7 (1, 4, ..,
        // 19) and w 6 (2, 5, .., 17).
        SchemeParams p;
        p.kind = SchemeKind::Mrope;
        const Layout layout = parseLayout("text:2,image:8x8");
        auto count = [](const FrequencyUsage& u, int axis, FrequencyUsage::Use use) {
            return std::count_if(u.pairs.begin(), u.pairs.end(), [&](const auto& q) { return q.component == axis && q.use == use; });
        };
        const FrequencyUsage sectioned = frequencyUsage(buildPositionTable(layout, p));
        QCOMPARE(sectioned.axes, (std::vector<std::string>{"t", "h", "w"}));
        QCOMPARE(sectioned.spans, (std::vector<double>{0, 7, 7}));
        QCOMPARE(count(sectioned, 1, FrequencyUsage::Use::Resolves), 4L);
        QCOMPARE(count(sectioned, 2, FrequencyUsage::Use::Resolves), 0L);
        QCOMPARE(count(sectioned, 0, FrequencyUsage::Use::Constant), 16L);
        QVERIFY(std::abs(sectioned.pairs[16].turnAcross - 7 * std::pow(1e6, -0.25)) < 1e-12);
        p.allocationKind = FrequencyAllocation::Kind::InterleavedMrope;
        const FrequencyUsage interleaved = frequencyUsage(buildPositionTable(layout, p));
        QCOMPARE(count(interleaved, 1, FrequencyUsage::Use::Resolves), 7L);
        QCOMPARE(count(interleaved, 2, FrequencyUsage::Use::Resolves), 6L);
        // A 40-wide grid wraps pair 2 (w under MRoPE-I, inv_freq 0.649: 25 rad across 39 columns).
        const FrequencyUsage wide = frequencyUsage(buildPositionTable(parseLayout("text:2,image:2x40"), p));
        QCOMPARE(wide.pairs[2].use, FrequencyUsage::Use::Wraps);
        // The prior's decay: 1 at distance 0; moving along t alone turns only t's pairs, so at any distance
        // it is (sum over t pairs of cos(inv_freq d) + the other 40 pairs) / 64.
        QCOMPARE(interleaved.decay[0][0], 1.0);
        const double d = interleaved.distances[5];
        double expected = 0;
        for (const auto& q : interleaved.pairs)
            expected += q.component == 0 ? std::cos(q.invFreq * d) : 1.0;
        QVERIFY(std::abs(interleaved.decay[0][5] - expected / 64) < 1e-12);
        QCOMPARE(interleaved.distances.back(), 16.0); // max(2 x span 7, 16)
    }
};

QTEST_APPLESS_MAIN(TestAgeFrequency)
#include "test_age_frequency.moc"

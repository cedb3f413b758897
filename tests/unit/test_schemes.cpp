#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"
#include "tests/unit/table_check.h"

#include <QtTest>

using namespace ropescope::geometry;

namespace {
PositionTable build(SchemeKind kind, const char* layout, SchemeParams p = {})
{
    p.kind = kind;
    return buildPositionTable(parseLayout(layout), p);
}
} // namespace

class TestSchemes : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void hardFlattensEverything()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Hard, "text:2,image:2x2,text:1"), {{0}, {1}, {2}, {3}, {4}, {5}, {6}}));
        QVERIFY(positionsEqual(build(SchemeKind::Hard, "text:1,video:2x1x2,text:1"), {{0}, {1}, {2}, {3}, {4}, {5}}));
    }

    void unorderedSharesOneIndexPerFrame()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Unordered, "text:2,image:2x2,text:1"), {{0}, {1}, {2}, {2}, {2}, {2}, {3}}));
        QVERIFY(positionsEqual(build(SchemeKind::Unordered, "text:1,video:3x1x2,text:2"), {{0}, {1}, {1}, {2}, {2}, {3}, {3}, {4}, {5}}));
    }

    // Golden tables, one image row or video frame per line: kept as laid out.
    // clang-format off
    void mropeResumesAtMaxPlusOne()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Mrope, "text:2,image:2x3,text:2"),
                               {{0, 0, 0}, {1, 1, 1},
                                {2, 2, 2}, {2, 2, 3}, {2, 2, 4}, {2, 3, 2}, {2, 3, 3}, {2, 3, 4},
                                {5, 5, 5}, {6, 6, 6}}));
    }

    void mropeMultiImage()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Mrope, "text:1,image:2x2,text:1,image:3x1,text:1"),
                               {{0, 0, 0},
                                {1, 1, 1}, {1, 1, 2}, {1, 2, 1}, {1, 2, 2},
                                {3, 3, 3},
                                {4, 4, 4}, {4, 5, 4}, {4, 6, 4},
                                {7, 7, 7}}));
    }

    void mropeVideoQwen2()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Mrope, "text:1,video:3x1x2,text:1"),
                               {{0, 0, 0}, {1, 1, 1}, {1, 1, 2}, {2, 1, 1}, {2, 1, 2}, {3, 1, 1}, {3, 1, 2}, {4, 4, 4}}));
    }

    void mropeVideoQwen25TemporalScaling()
    {
        SchemeParams p;
        p.temporal.mode = TemporalParams::Mode::Qwen25VL;
        p.temporal.secondPerGrid = 1.0;
        p.temporal.tokensPerSecond = 2.0; // tau = 0, 2, 4
        QVERIFY(positionsEqual(build(SchemeKind::Mrope, "text:1,video:3x1x2,text:1", p),
                               {{0, 0, 0}, {1, 1, 1}, {1, 1, 2}, {3, 1, 1}, {3, 1, 2}, {5, 1, 1}, {5, 1, 2}, {6, 6, 6}}));
        p.temporal.tokensPerSecond = 0.5; // tau = floor(0, 0.5, 1) = 0, 0, 1
        QVERIFY(positionsEqual(build(SchemeKind::Mrope, "text:1,video:3x1x2,text:1", p),
                               {{0, 0, 0}, {1, 1, 1}, {1, 1, 2}, {1, 1, 1}, {1, 1, 2}, {2, 1, 1}, {2, 1, 2}, {3, 3, 3}}));
    }

    void compactContinuesEachAxis()
    {
        QVERIFY(positionsEqual(build(SchemeKind::Compact, "text:1,video:2x2x3,text:2"),
                               {{0, 0, 0},
                                {1, 1, 1}, {1, 1, 2}, {1, 1, 3}, {1, 2, 1}, {1, 2, 2}, {1, 2, 3},
                                {2, 1, 1}, {2, 1, 2}, {2, 1, 3}, {2, 2, 1}, {2, 2, 2}, {2, 2, 3},
                                {3, 3, 4}, {4, 4, 5}}));
        QVERIFY(positionsEqual(build(SchemeKind::Compact, "text:1,image:2x2,text:1,image:1x1,text:1"),
                               {{0, 0, 0}, {1, 1, 1}, {1, 1, 2}, {1, 2, 1}, {1, 2, 2}, {2, 3, 3}, {3, 4, 4}, {4, 5, 5}}));
    }

    void vropeSymmetricComponents()
    {
        // s + (h+w, h+(W-1-w), (H-1-h)+w, (H-1-h)+(W-1-w)), text resumes at s + T*(H+W-1)
        QVERIFY(positionsEqual(build(SchemeKind::Vrope, "text:1,image:2x3,text:1"),
                               {{0, 0, 0, 0},
                                {1, 3, 2, 4}, {2, 2, 3, 3}, {3, 1, 4, 2},
                                {2, 4, 1, 3}, {3, 3, 2, 2}, {4, 2, 3, 1},
                                {5, 5, 5, 5}}));
    }

    // clang-format on

    void vropeVideoFramesAdvanceAlongTextAxis()
    {
        const PositionTable t = build(SchemeKind::Vrope, "text:1,video:2x2x2,text:1");
        QCOMPARE(t.size(), 10);
        // frame 1 starts at 1 + (H+W-1) = 4; token (f=1,h=1,w=0) = 1 + 4 + 2 = 7
        const Eigen::RowVector4d expected(5, 6, 4, 5);
        QVERIFY((t.positions.row(7) - expected).norm() < 1e-12);
        QCOMPARE(t.positions(9, 0), 7.0);
        // every frame's centre sits on the text axis: the four components average to the same value
        for (int f = 0; f < 2; ++f) {
            const auto frame = t.positions.middleRows(1 + 4 * f, 4);
            const Eigen::RowVector4d mean = frame.colwise().mean();
            QVERIFY((mean.array() - mean[0]).abs().maxCoeff() < 1e-12);
        }
        QCOMPARE(t.allocation.kind, FrequencyAllocation::Kind::Interleaved);
        QCOMPARE(t.allocation.components, 4);
    }

    void namesRoundTrip()
    {
        for (SchemeKind k : allSchemes())
            QCOMPARE(schemeFromName(schemeName(k)), std::optional<SchemeKind>(k));
        QVERIFY(!schemeFromName("circle-rope"));
        // The registry: every kind once, with its summary and the component count its table really has.
        QCOMPARE(allSchemes().size(), size_t(20));
        Layout layout = parseLayout("text:2,image:2x2,text:2");
        for (SchemeKind k : allSchemes()) {
            const std::string summary = schemeSummary(k), name = schemeName(k);
            QVERIFY2(summary.rfind(name + ":", 0) == 0 || summary.rfind(name + " (", 0) == 0, summary.c_str());
            SchemeParams p;
            p.kind = k;
            QCOMPARE(static_cast<int>(buildPositionTable(layout, p).positions.cols()), componentCount(k));
            QCOMPARE(componentNames(k).size(), static_cast<size_t>(componentCount(k)));
        }
    }

    void registryDefaultsAreThePapers()
    {
        // Each scheme's defaults as its paper and the reference code (Multimodal-RoPEs) set them, written out
        // here independently of the registry: own frequency allocation, video form, temporal stride (0: none).
        using A = FrequencyAllocation::Kind;
        struct Expected {
            const char* name;
            std::optional<A> allocation;
            VideoForm video;
            double stride;
        };
        const Expected expected[] = {
            {"hard", std::nullopt, VideoForm::Grid, 0},
            {"unordered", std::nullopt, VideoForm::Grid, 0},
            {"mrope", std::nullopt, VideoForm::Grid, 0},
            {"compact", std::nullopt, VideoForm::Grid, 0},
            {"circle", std::nullopt, VideoForm::Grid, 0},
            {"vrope", A::Interleaved, VideoForm::Grid, 0},
            {"videorope", A::HwAlternating, VideoForm::Grid, 2},
            {"hope", A::HwAlternating, VideoForm::Grid, 1},
            {"v2pe", std::nullopt, VideoForm::Grid, 0},
            {"omnirope", A::Sectioned, VideoForm::Grid, 1},
            {"ilrope", A::InterleavedMrope, VideoForm::Grid, 1},
            {"spatial-reset", A::InterleavedMrope, VideoForm::Grid, 1},
            {"mrope-i", A::InterleavedMrope, VideoForm::Split, 0},
            {"mhrope", A::PerHead, VideoForm::Split, 0},
            {"tad-rope", std::nullopt, VideoForm::Grid, 1},
            {"videorope++", A::HwAlternating, VideoForm::Grid, 2},
            {"mm-rope", A::Distributed, VideoForm::Grid, 1},
            {"glm-v", std::nullopt, VideoForm::Split, 0},
            {"ernie-vl", A::HwInterleaved, VideoForm::Grid, 0},
            {"xd-rope", A::Sectioned, VideoForm::Split, 0},
        };
        QCOMPARE(std::size(expected), allSchemes().size());
        for (const Expected& e : expected) {
            const auto kind = schemeFromName(e.name);
            QVERIFY2(kind, e.name);
            SchemeParams p;
            p.kind = *kind;
            QVERIFY2(designAllocation(*kind) == e.allocation, e.name);
            QVERIFY2(p.videoFormOrDefault() == e.video, e.name);
            QVERIFY2(usesTemporalStride(*kind) == (e.stride > 0), e.name);
            QCOMPARE(p.temporalStrideOrDefault(), e.stride > 0 ? e.stride : 1.0);
            p.videoForm = e.video == VideoForm::Grid ? VideoForm::Split : VideoForm::Grid; // the user's choice wins
            QVERIFY2(p.videoFormOrDefault() != e.video, e.name);
        }
    }

    // GLM-V's own rotary (GLM-4.1V-9B-Thinking's config.json: rope_theta 10000, partial_rotary_factor 0.5,
    // adjacent pairs in transformers' apply_rotary_pos_emb) and ERNIE-VL's; every other scheme keeps Qwen2-VL's.
    void rotaryDefaultsFollowTheScheme()
    {
        // ERNIE-4.5-VL's config: rope_theta 500000, the whole head on adjacent pairs.
        for (SchemeKind k : allSchemes()) {
            const RotaryConfig r = schemeRotaryDefaults(k);
            const bool glm = k == SchemeKind::GlmV, ernie = k == SchemeKind::ErnieVl;
            QCOMPARE(r.theta, glm || k == SchemeKind::XdRope ? 1e4 : ernie ? 5e5 : 1e6); // HunyuanOCR: rope_theta 10000
            QCOMPARE(r.partial, glm ? 0.5 : 1.0);
            QCOMPARE(r.pairing, glm || ernie ? RotaryPairing::Adjacent : RotaryPairing::Half);
            QCOMPARE(defaultSchemeParams(k).rotary.pairing, r.pairing);
        }
        // At head_dim 128 GLM rotates 64 dims: 32 frequencies in the sections [8, 12, 12] of its config.
        const PositionTable t = buildPositionTable(parseLayout("text:2,image:2x2"), defaultSchemeParams(SchemeKind::GlmV));
        QCOMPARE(t.rotary.rotaryDim(), 64);
        QCOMPARE(t.allocation.sections, (std::vector<int>{8, 12, 12}));
        QCOMPARE(t.rotary.pairDims(3), std::make_pair(6, 7));
        RotaryConfig half = t.rotary;
        half.pairing = RotaryPairing::Half;
        QCOMPARE(half.pairDims(3), std::make_pair(3, 35));
    }

    // GLM-V places a video as MRoPE-I does, one image span per frame: frame f at s_f, the next at s_f + max(H, W).
    void glmVPlacesEveryFrameAsAnImage()
    {
        const PositionTable t = buildPositionTable(parseLayout("text:2,video:2x2x3,text:1"), defaultSchemeParams(SchemeKind::GlmV));
        const std::vector<double> tRow{0, 1, 2, 2, 2, 2, 2, 2, 5, 5, 5, 5, 5, 5, 8};
        const std::vector<double> hRow{0, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5, 6, 6, 6, 8};
        const std::vector<double> wRow{0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 5, 6, 7, 8};
        for (int i = 0; i < t.size(); ++i) {
            QCOMPARE(t.positions(i, 0), tRow[static_cast<size_t>(i)]);
            QCOMPARE(t.positions(i, 1), hRow[static_cast<size_t>(i)]);
            QCOMPARE(t.positions(i, 2), wRow[static_cast<size_t>(i)]);
        }
    }

    void rejectsBadParameters_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("parameter"); // as session files spell it; the CLI and GUI reword it
        QTest::newRow("alpha") << 0 << "alpha";
        QTest::newRow("radius") << 1 << "radius";
        QTest::newRow("vector") << 2 << "text_vector";
        QTest::newRow("stride") << 3 << "stride";
        QTest::newRow("head dim") << 4 << "head_dim";
        QTest::newRow("sections") << 5 << "sections";
        QTest::newRow("theta") << 6 << "theta";
    }
    void rejectsBadParameters()
    {
        QFETCH(int, which);
        QFETCH(QString, parameter);
        SchemeParams p;
        p.kind = SchemeKind::Circle;
        switch (which) {
        case 0: p.circle.alpha = 1.5; break;
        case 1: p.circle.radius = 0; break;
        case 2: p.circle.textVector.setZero(); break;
        case 3: p.circle.stride = -1; break;
        case 4: p.rotary.headDim = 7; break;
        case 5: p.sections = {10, 10, 10}; break;
        case 6: p.rotary.theta = std::nan(""); break;
        }
        try {
            buildPositionTable(parseLayout("text:1,image:2x2"), p);
            QFAIL("no error");
        } catch (const InvalidInput& e) {
            QCOMPARE(QString::fromStdString(e.parameter()), parameter);
            QVERIFY2(QString(e.what()).startsWith(parameter + ": " + QString::fromStdString(e.reason())), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestSchemes)
#include "test_schemes.moc"

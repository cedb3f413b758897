// ReadoutEngine: the readouts of one explorer state, the PTD of every scheme on its layout (cached per
// layout and parameters), and the states some schemes cannot take.
#include "core/geometry/metrics.h"
#include "core/session/readouts.h"

#include <QtTest>

using namespace ropescope;
using namespace ropescope::geometry;

namespace {

double barOf(const session::Readouts& r, SchemeKind kind)
{
    for (const session::SchemePtd& s : r.ptdBySchemes)
        if (s.kind == kind)
            return s.ptd;
    return -1;
}

} // namespace

class TestReadouts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everySchemeHasItsBar()
    {
        session::ExplorerState s;
        s.layout = "text:3,image:4x5,text:2";
        session::ReadoutEngine engine;
        const session::Readouts r = engine.compute(s);
        QCOMPARE(r.ptdBySchemes.size(), allSchemes().size());
        // Each bar is that scheme's own PTD on the layout.
        for (const session::SchemePtd& bar : r.ptdBySchemes) {
            SchemeParams p = s.params;
            p.kind = bar.kind;
            if (componentCount(bar.kind) != componentCount(s.params.kind)) {
                p.allocationKind.reset();
                p.sections.clear();
            }
            QCOMPARE(bar.ptd, computePtd(buildPositionTable(parseLayout(s.layout), p)).mean);
        }
    }

    void theCacheSeesEveryParameter()
    {
        // A cached PTD must not survive a change of a parameter that places tokens (MM-RoPE's scale).
        session::ExplorerState s;
        s.layout = "text:3,image:4x5,text:2";
        session::ReadoutEngine engine;
        const double before = barOf(engine.compute(s), SchemeKind::MmRope);
        s.params.positionScale = Eigen::Vector3d(1, 1, 1);
        const double after = barOf(engine.compute(s), SchemeKind::MmRope);
        QVERIFY(before != after);
        SchemeParams p = s.params;
        p.kind = SchemeKind::MmRope;
        QCOMPARE(after, computePtd(buildPositionTable(parseLayout(s.layout), p)).mean);
        // And the same parameters are equal (the cache key compares fields, not JSON text).
        SchemeParams q = p;
        QVERIFY(q == p);
        q.ntkFactor = 2;
        QVERIFY(q != p);
    }

    void anAlphaStepRecomputesOnlyCircle()
    {
        // The chart of all schemes: alpha moves only Circle-RoPE's tokens, so only its PTD is recomputed
        // (each alpha step recomputed all 16 other schemes, 4.6x the live view's goal).
        session::ExplorerState s;
        s.layout = "text:3,image:4x5,text:2";
        s.params.kind = SchemeKind::Mrope;
        session::ReadoutEngine engine;
        engine.compute(s);
        QCOMPARE(engine.ptdComputations(), static_cast<long long>(allSchemes().size() - 1));
        s.params.circle.alpha = 0.3;
        const session::Readouts r = engine.compute(s);
        QCOMPARE(engine.ptdComputations(), static_cast<long long>(allSchemes().size()));
        SchemeParams circle = s.params;
        circle.kind = SchemeKind::Circle;
        QCOMPARE(barOf(r, SchemeKind::Circle), computePtd(buildPositionTable(parseLayout(s.layout), circle)).mean);
        // A stride moves the video schemes' frames: those recompute, the others do not.
        s.layout = "text:3,video:3x2x2,text:2";
        engine.compute(s);
        const long long before = engine.ptdComputations();
        s.params.temporalStride = 3;
        engine.compute(s);
        long long strided = 0;
        for (SchemeKind kind : allSchemes())
            strided += kind != SchemeKind::Mrope && usesTemporalStride(kind) ? 1 : 0;
        QCOMPARE(engine.ptdComputations() - before, strided);
    }

    void schemesThatCannotTakeTheSettingsAreLeftOut()
    {
        // head_dim 2 is fine for M-RoPE but not for VideoRoPE's hw-alternating allocation or VideoRoPE++.
        session::ExplorerState s;
        s.layout = "text:3,image:4x5,text:2";
        s.params.kind = SchemeKind::Mrope;
        s.params.rotary.headDim = 2;
        session::ReadoutEngine engine;
        const session::Readouts r = engine.compute(s);
        QVERIFY(barOf(r, SchemeKind::Mrope) >= 0);
        QCOMPARE(barOf(r, SchemeKind::VideoRopePlus), -1.0);
        QVERIFY(std::any_of(r.warnings.begin(), r.warnings.end(),
                            [](const std::string& w) { return w.find("PTD chart leaves out videorope++") == 0; }));
    }
};

QTEST_APPLESS_MAIN(TestReadouts)
#include "test_readouts.moc"

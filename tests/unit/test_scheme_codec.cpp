// The one JSON spelling of scheme parameters (io/scheme_codec) and the session that uses it: every field
// survives a round trip, old records read with defaults, and a bad value is named by its key.
#include "core/geometry/errors.h"
#include "core/io/scheme_codec.h"
#include "core/session/explorer_state.h"

#include <QJsonArray>
#include <QtTest>

using namespace ropescope;
using namespace ropescope::geometry;

namespace {

SchemeParams everyFieldChanged()
{
    SchemeParams p;
    p.kind = SchemeKind::MmRope;
    p.circle.alpha = 0.25;
    p.circle.radiusMode = RadiusMode::AutoCode;
    p.circle.radius = 1.5;
    p.circle.textVector = Eigen::Vector3d(0, 0.5, 2);
    p.circle.stride = 3;
    p.temporal.mode = TemporalParams::Mode::Qwen25VL;
    p.temporal.secondPerGrid = 0.5;
    p.temporal.tokensPerSecond = 4;
    p.rotary.theta = 10000;
    p.rotary.headDim = 64;
    p.rotary.heads = 12;
    p.rotary.partial = 0.75; // 48 of 64 dims rotate: 24 frequencies
    p.rotary.pairing = RotaryPairing::Adjacent;
    p.allocationKind = FrequencyAllocation::Kind::HwAlternating;
    p.sections = {4, 10, 10};
    p.temporalStride = 1.5;
    p.visualStride = 7;
    p.positionScale = Eigen::Vector3d(1, 2, 3);
    p.ntkFactor = 8;
    return p;
}

void compareParams(const SchemeParams& a, const SchemeParams& b)
{
    QCOMPARE(a.kind, b.kind);
    QCOMPARE(a.circle.alpha, b.circle.alpha);
    QCOMPARE(a.circle.radiusMode, b.circle.radiusMode);
    QCOMPARE(a.circle.radius, b.circle.radius);
    QCOMPARE(a.circle.textVector, b.circle.textVector);
    QCOMPARE(a.circle.stride, b.circle.stride);
    QCOMPARE(a.temporal.mode, b.temporal.mode);
    QCOMPARE(a.temporal.secondPerGrid, b.temporal.secondPerGrid);
    QCOMPARE(a.temporal.tokensPerSecond, b.temporal.tokensPerSecond);
    QCOMPARE(a.rotary.theta, b.rotary.theta);
    QCOMPARE(a.rotary.headDim, b.rotary.headDim);
    QCOMPARE(a.rotary.heads, b.rotary.heads);
    QCOMPARE(a.rotary.partial, b.rotary.partial);
    QCOMPARE(a.rotary.pairing, b.rotary.pairing);
    QCOMPARE(a.allocationKind, b.allocationKind);
    QCOMPARE(a.sections, b.sections);
    QCOMPARE(a.temporalStride, b.temporalStride);
    QCOMPARE(a.visualStride, b.visualStride);
    QCOMPARE(a.positionScale, b.positionScale);
    QCOMPARE(a.ntkFactor, b.ntkFactor);
}

} // namespace

class TestSchemeCodec : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everyFieldRoundTrips()
    {
        const SchemeParams p = everyFieldChanged();
        QJsonObject o;
        io::writeSchemeParams(o, p);
        compareParams(io::readSchemeParams(io::JsonFields(o, "test")), p);
        // One table of names: the spellings sessions and model records share.
        QCOMPARE(o["radius_mode"].toString(), QString("code-auto"));
        QCOMPARE(o["temporal"].toString(), QString("qwen25vl"));
        QCOMPARE(o["allocation"].toString(), QString("hw-alternating"));
        for (RadiusMode m : {RadiusMode::Fixed, RadiusMode::AutoPaper, RadiusMode::AutoCode})
            QCOMPARE(io::radiusModeFromName(io::radiusModeName(m)), m);
    }

    void oldRecordsReadWithDefaults()
    {
        // A model record from before the text vector, allocation and 2025 keys existed.
        const QJsonObject old{{"scheme", "circle"},      {"alpha", 0.5}, {"radius", 16},
                              {"radius_mode", "fixed"},  {"stride", 1},  {"allocation", "default"},
                              {"sections", QJsonArray{}}};
        SchemeParams expected;
        expected.kind = SchemeKind::Circle;
        expected.circle.radius = 16;
        compareParams(io::readSchemeParams(io::JsonFields(old, "test")), expected);
    }

    // GLM-V's own rotary is what a record of it means unless it says otherwise; a Qwen-style scheme set to
    // GLM's pairing keeps it. Partial rotary and pairing are written only where they differ from the scheme's.
    void rotaryFollowsTheSchemesOwn()
    {
        QJsonObject glm;
        io::writeSchemeParams(glm, defaultSchemeParams(SchemeKind::GlmV));
        QVERIFY(!glm.contains("pairing") && !glm.contains("partial_rotary"));
        const SchemeParams read = io::readSchemeParams(io::JsonFields(glm, "test"));
        QCOMPARE(read.rotary.pairing, RotaryPairing::Adjacent);
        QCOMPARE(read.rotary.partial, 0.5);
        QCOMPARE(read.rotary.theta, 1e4);
        SchemeParams glmHalf = defaultSchemeParams(SchemeKind::GlmV);
        glmHalf.rotary.pairing = RotaryPairing::Half; // GLM-4.5V's rotation
        QJsonObject o;
        io::writeSchemeParams(o, glmHalf);
        QCOMPARE(o["pairing"].toString(), QString("half"));
        QCOMPARE(io::readSchemeParams(io::JsonFields(o, "test")).rotary.pairing, RotaryPairing::Half);
        // A hand-written batch item names only the scheme: GLM's theta, fraction and pairing.
        const SchemeParams item = io::readSchemeParams(io::JsonFields(QJsonObject{{"scheme", "glm-v"}}, "test"));
        QCOMPARE(item.rotary.theta, 1e4);
        QCOMPARE(item.rotary.pairing, RotaryPairing::Adjacent);
        try {
            io::readSchemeParams(io::JsonFields(QJsonObject{{"scheme", "mrope"}, {"pairing", "diagonal"}}, "session"));
            QFAIL("accepted");
        } catch (const InvalidInput& e) {
            QVERIFY2(QString(e.what()).startsWith("session: 'pairing' must be half or adjacent"), e.what());
        }
    }

    // Gemma's full layers (issue 73): proportional frequencies and a linear factor are written only where set and read
    // back; a record that names its scheme and leaves them out means off and 1; a factor that is not positive is named.
    void gemmaRotaryFormsRoundTrip()
    {
        SchemeParams p = defaultSchemeParams(SchemeKind::Mrope);
        QJsonObject plain;
        io::writeSchemeParams(plain, p);
        QVERIFY(!plain.contains("proportional") && !plain.contains("linear_factor"));
        p.rotary.proportional = true;
        p.rotary.linearFactor = 8;
        QJsonObject o;
        io::writeSchemeParams(o, p);
        QCOMPARE(o["proportional"].toBool(), true);
        QCOMPARE(o["linear_factor"].toDouble(), 8.0);
        const SchemeParams read = io::readSchemeParams(io::JsonFields(o, "test"));
        QVERIFY(read.rotary.proportional);
        QCOMPARE(read.rotary.linearFactor, 8.0);
        const SchemeParams off = io::readSchemeParams(io::JsonFields(plain, "test"), read);
        QVERIFY(!off.rotary.proportional);
        QCOMPARE(off.rotary.linearFactor, 1.0);
        try {
            io::readSchemeParams(io::JsonFields(QJsonObject{{"scheme", "mrope"}, {"linear_factor", 0}}, "session"));
            QFAIL("accepted");
        } catch (const InvalidInput& e) {
            QVERIFY2(QString(e.what()).startsWith("session: 'linear_factor' must be a positive number"), e.what());
        }
    }

    void badValuesAreNamed_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("scheme") << "scheme" << QJsonValue("rope9") << "session: 'scheme' is not a known scheme: rope9";
        QTest::newRow("alpha") << "alpha" << QJsonValue("half") << "session: 'alpha' must be a number";
        QTest::newRow("radius mode") << "radius_mode" << QJsonValue("big") << "session: 'radius_mode' must be fixed, auto or code-auto";
        QTest::newRow("temporal") << "temporal" << QJsonValue("qwen2.5-vl") << "session: 'temporal' must be qwen2vl or qwen25vl";
        QTest::newRow("allocation") << "allocation" << QJsonValue("spiral") << "session: 'allocation' must be default";
        QTest::newRow("position scale") << "position_scale" << QJsonValue(QJsonArray{1, 2})
                                        << "session: 'position_scale' must be an array of 3";
        QTest::newRow("kv heads") << "kv_heads" << QJsonValue(2.5) << "session: 'kv_heads' must be a whole number";
        QTest::newRow("sections") << "sections" << QJsonValue(QJsonArray{1, "x", 3}) << "session: 'sections' must be an array";
    }
    void badValuesAreNamed()
    {
        QFETCH(QString, key);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        session::ExplorerState s;
        QJsonObject o = s.toJson();
        o[key] = value;
        try {
            session::ExplorerState::fromJson(o);
            QFAIL("accepted");
        } catch (const InvalidInput& e) {
            QVERIFY2(QString(e.what()).startsWith(message), e.what());
        }
    }

    void sessionRoundTrips()
    {
        session::ExplorerState s;
        s.layout = "text:2,video:3x4x4,text:3";
        s.params = everyFieldChanged();
        s.age = "CM";
        s.ageLayers = 8;
        s.layer = 3;
        s.selectedToken = 1;
        s.colourMode = session::ColourMode::DistanceToSelected;
        s.camera = session::CameraPreset::Side;
        s.projection = {session::Projection4D::Components, {2, 1, 3}};
        s.cameraState = session::CameraState{{1, 2, 3}, {0, 0, 0}, {0, 0, 1}, 25};
        const session::ExplorerState back = session::ExplorerState::fromJson(s.toJson());
        compareParams(back.params, s.params);
        QCOMPARE(back.layout, s.layout);
        QCOMPARE(back.age, s.age);
        QCOMPARE(back.ageLayers, 8);
        QCOMPARE(back.layer, 3);
        QCOMPARE(back.colourMode, session::ColourMode::DistanceToSelected);
        QCOMPARE(back.camera, session::CameraPreset::Side);
        QVERIFY(back.projection == s.projection);
        // The file spells them as the CLI flags do.
        QCOMPARE(s.toJson()["colour"].toString(), QString("distance"));
        QCOMPARE(s.toJson()["camera"].toString(), QString("side"));
        QCOMPARE(s.toJson()["projection"].toString(), QString("2,1,3"));
        QVERIFY(back.cameraState);
        QCOMPARE(back.cameraState->viewAngle, 25.0);
        QCOMPARE(back.cameraState->viewUp[2], 1.0);
        // A state that cannot be drawn is refused on reading, naming the parameter.
        QJsonObject o = s.toJson();
        o["ntk_factor"] = 0.5;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, session::ExplorerState::fromJson(o));
        // A projection the 3-D view cannot draw (component 7 of four) is refused too, not clamped later.
        for (const char* bad : {"7,1,2", "0,1", "0;1;2", "hadamard2", ""}) {
            QJsonObject p = s.toJson();
            p["projection"] = bad;
            try {
                session::ExplorerState::fromJson(p);
                QFAIL(bad);
            } catch (const InvalidInput& e) {
                QVERIFY2(QString(e.what()).contains("projection"), e.what());
            }
        }
    }

    void viewOptionNames()
    {
        for (auto m : {session::ColourMode::RowCol, session::ColourMode::ImagePatch, session::ColourMode::DistanceToSelected})
            QCOMPARE(session::colourModeFromName(session::colourModeName(m)), std::optional(m));
        for (auto c : {session::CameraPreset::Isometric, session::CameraPreset::DownTextAxis, session::CameraPreset::Side})
            QCOMPARE(session::cameraPresetFromName(session::cameraPresetName(c)), std::optional(c));
        QCOMPARE(std::string(session::cameraPresetName(session::CameraPreset::DownTextAxis)), std::string("axis"));
        QCOMPARE(session::projectionFromName("hadamard")->kind, session::Projection4D::Hadamard);
        const auto p = session::projectionFromName("3,0,2");
        QVERIFY(p && p->kind == session::Projection4D::Components);
        QCOMPARE(p->components, (std::array<int, 3>{3, 0, 2}));
        QCOMPARE(session::projectionName(*p), std::string("3,0,2"));
        QVERIFY(!session::colourModeFromName("patches"));
        QVERIFY(!session::cameraPresetFromName("Isometric"));
    }
};

QTEST_APPLESS_MAIN(TestSchemeCodec)
#include "test_scheme_codec.moc"

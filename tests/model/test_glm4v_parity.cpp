// Parity with Hugging Face transformers 5.3 (eager, float32) on the tiny GLM-4V fixture in
// tests/data/fixtures/glm4v-tiny (../shared/fixtures README, "GLM-4V fixture"): partial M-RoPE on adjacent
// pairs, sandwich norms, a fused gate_up_proj, and a vision tower with a bicubically resampled position table,
// a 2x2 downsample and a gated merger. All five cases, every tensor the fixture records, through the normal
// loader and model code with the model's own scheme (glm-v), at the fixture README's tolerances.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/geometry/scheme.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

#include "tests/support/parity.h"
#endif

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;

namespace {

ForwardRequest requestFor(const SafeTensors& inputs)
{
    ForwardRequest req;
    req.inputIds = toTorch(inputs, "input_ids").flatten();
    req.tokenTypes = toTorch(inputs, "mm_token_type_ids").flatten();
    if (inputs.find("pixel_values")) {
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
    }
    if (inputs.find("pixel_values_videos")) {
        req.videoPixelValues = toTorch(inputs, "pixel_values_videos");
        req.videoGridThw = toTorch(inputs, "video_grid_thw");
    }
    return req;
}

torch::Tensor positionsOf(const geometry::PositionTable& t)
{
    return torch::from_blob(const_cast<double*>(t.positions.data()), {t.components(), t.size()}, torch::kFloat64).to(torch::kInt64);
}

} // namespace

class TestGlm4vParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The Hub's legacy rope keys at text_config level, folded as transformers 5 folds them.
    void config()
    {
        const ModelConfig c = loadModelConfig(fixture("glm4v-tiny/config.json"));
        QCOMPARE(c.architecture, Architecture::GlmV);
        QCOMPARE(c.text.headDim(), 32);
        QCOMPARE(c.text.rotaryDim(), 16);
        QCOMPARE(c.text.ropeTheta, 1000.0);
        QCOMPARE(c.text.mropeSection, (std::vector<int>{2, 3, 3}));
        QCOMPARE(c.text.pairing, geometry::RotaryPairing::Adjacent);
        QVERIFY(c.text.sandwichNorms && c.text.fusedGateUp && c.text.attentionBias && !c.text.tieEmbeddings);
        QCOMPARE(c.vision.positionGridSide(), 4);
        QCOMPARE(c.vision.mlpHidden, 128);
        QCOMPARE(c.vision.mergerHidden, 96);
        QVERIFY(!c.vision.attentionBias);
        QCOMPARE(c.imageToken, 254);
        QCOMPARE(c.visionStart, 250);
        QCOMPARE(c.videoStart, 252);
        QCOMPARE(c.eos, 240);
        QCOMPARE(ownSchemeKind(c), geometry::SchemeKind::GlmV);
        // GLM-4.1V-9B's real shapes (resources/configs): a 24 x 24 table, 64 of 128 dims rotating.
        const ModelConfig hub = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/glm4v-9b.json");
        QCOMPARE(hub.vision.positionEmbeddings, 576);
        QCOMPARE(hub.text.rotaryDim(), 64);
        QCOMPARE(hub.text.mropeSection, (std::vector<int>{8, 12, 12}));
    }

    // transformers 5's rope_parameters and the glm46v model type read the same; glm4v_moe reads as GLM-4.5V's decoder.
    void ropeParametersAndModelTypes()
    {
        QFile file(fixture("glm4v-tiny/config.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray legacy = file.readAll();
        // transformers 5's form: the rope keys folded into text_config.rope_parameters, model_type glm46v.
        QJsonObject root = QJsonDocument::fromJson(legacy).object(), text = root["text_config"].toObject();
        QJsonObject rope = text["rope_scaling"].toObject();
        rope["rope_theta"] = text.take("rope_theta");
        rope["partial_rotary_factor"] = text.take("partial_rotary_factor");
        rope["rope_type"] = rope.take("type");
        text.remove("rope_scaling");
        text["rope_parameters"] = rope;
        root["text_config"] = text;
        root["model_type"] = "glm46v";
        const QByteArray modern = QJsonDocument(root).toJson();
        QVERIFY(!modern.contains("rope_scaling") && !text.contains("rope_theta"));
        const ModelConfig a = parseModelConfig(legacy, "legacy"), b = parseModelConfig(modern, "modern");
        QCOMPARE(b.architecture, Architecture::GlmV);
        QCOMPARE(b.text.ropeTheta, a.text.ropeTheta);
        QCOMPARE(b.text.rotaryDim(), a.text.rotaryDim());
        QCOMPARE(b.text.mropeSection, a.text.mropeSection);
        QVERIFY(b.glm46 && !a.glm46); // GLM-4.6V's chat template: "{t:.1f} seconds" after each video frame
        // glm4v_moe is GLM-4.5V's decoder: the same positions turned on half-split pairs, two norms per layer.
        QByteArray moe = legacy;
        moe.replace("\"model_type\": \"glm4v\",", "\"model_type\": \"glm4v_moe\",");
        const ModelConfig m = parseModelConfig(moe, "moe/config.json");
        QCOMPARE(m.architecture, Architecture::GlmV);
        QCOMPARE(m.text.pairing, geometry::RotaryPairing::Half);
        QVERIFY(m.text.moe.any() && !m.text.sandwichNorms && !m.text.fusedGateUp);
    }

    // The explorer's glm-v on layouts written by hand (GLM's begin/end and timestamp tokens counted as text)
    // gives the fixtures' position_ids: one image, two images of different sizes, a video of per-frame spans.
    void builtInSchemeEqualsTheFixtures_data()
    {
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<QString>("layout");
        QTest::newRow("main") << ""
                              << "text:4,image:2x3,text:5";
        QTest::newRow("multi") << "_multi"
                               << "text:3,image:2x3,text:5,image:4x3,text:3";
        QTest::newRow("video") << "_video"
                               << "text:5,video:1x2x2,text:4,video:1x2x2,text:8";
    }
    void builtInSchemeEqualsTheFixtures()
    {
        QFETCH(QString, suffix);
        QFETCH(QString, layout);
        const geometry::PositionTable t = geometry::buildPositionTable(geometry::parseLayout(layout.toStdString()),
                                                                       geometry::defaultSchemeParams(geometry::SchemeKind::GlmV));
        const auto want = toTorch(SafeTensors::open(fixture("glm4v-tiny/expected" + suffix + ".safetensors")), "position_ids");
        QVERIFY(torch::equal(positionsOf(t).unsqueeze(1), want));
    }

    // Without mm_token_type_ids the image and video pads cannot be told apart: refused in one line.
    void tokenTypesAreRequired()
    {
        Vlm vlm(fixture("glm4v-tiny"));
        ForwardRequest req = requestFor(SafeTensors::open(fixture("glm4v-tiny/inputs.safetensors")));
        req.tokenTypes = torch::Tensor();
        try {
            vlm.run(req);
            QFAIL("ran without mm_token_type_ids");
        } catch (const ModelError& e) {
            const QString m = e.what();
            QVERIFY2(m.startsWith("mm_token_type_ids") && !m.contains('\n'), e.what());
        }
        // A type on a text token is named with its index.
        req = requestFor(SafeTensors::open(fixture("glm4v-tiny/inputs.safetensors")));
        req.tokenTypes = req.tokenTypes.clone();
        req.tokenTypes[0] = 1;
        try {
            vlm.run(req);
            QFAIL("ran with a typed text token");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("token 0 has type 1"), e.what());
        }
        // Text alone needs none: its positions are 1-D either way.
        ForwardRequest text = requestFor(SafeTensors::open(fixture("glm4v-tiny/inputs_text.safetensors")));
        text.tokenTypes = torch::Tensor();
        QCOMPARE(vlm.run(text).prefill.logits.size(0), int64_t(1));
    }
};

QTEST_GUILESS_MAIN(TestGlm4vParity)
#include "test_glm4v_parity.moc"

// Parity with Hugging Face transformers 5.3 (eager, float32) on the tiny PaddleOCR-VL fixture in
// tests/data/fixtures/paddleocr-vl-tiny (../shared/fixtures README, "PaddleOCR-VL fixture"): the ERNIE-4.5
// decoder (explicit head_dim, no biases) with Qwen2-VL's M-RoPE, and a SigLIP-NaViT tower (raster-order
// patches, a bilinearly resized position table, a projector merging 2x2 patches). All four cases, every
// tensor the fixture records, through the normal loader and model code, at the fixture README's tolerances.
#include "core/geometry/scheme.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <QtTest>

#include "tests/support/parity.h"

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;

namespace {

// The fixture README's suggested tolerances (as for Qwen2-VL).
constexpr double kOutputs = 1e-4, kVision = 1e-4, kAttention = 1e-5;

ForwardRequest requestFor(const SafeTensors& inputs)
{
    ForwardRequest req;
    req.inputIds = toTorch(inputs, "input_ids").flatten();
    req.tokenTypes = toTorch(inputs, "mm_token_type_ids").flatten();
    if (inputs.find("pixel_values")) {
        req.pixelValues = toTorch(inputs, "pixel_values"); // [N, 3, 14, 14], raster order per image
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
    }
    return req;
}

} // namespace

class TestPaddleOcrVlParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The Hub's flat ERNIE text config with legacy rope_scaling, a nested SigLIP vision config, tie at the top.
    void config()
    {
        const ModelConfig c = loadModelConfig(fixture("paddleocr-vl-tiny/config.json"));
        QCOMPARE(c.architecture, Architecture::PaddleOcrVl);
        QCOMPARE(c.text.headDim(), 32);
        QCOMPARE(c.text.rotaryDim(), 32);
        QCOMPARE(c.text.mropeSection, (std::vector<int>{4, 6, 6}));
        QCOMPARE(c.text.pairing, geometry::RotaryPairing::Half);
        QVERIFY(!c.text.attentionBias && !c.text.tieEmbeddings && !c.text.sandwichNorms);
        QCOMPARE(c.vision.temporalPatch, 1);
        QCOMPARE(c.vision.patchDim(), 3 * 14 * 14);
        QCOMPARE(c.vision.positionGridSide(), 4);
        QCOMPARE(c.imageToken, 250);
        QCOMPARE(c.visionStart, 252);
        QCOMPARE(c.eos, 2);
        QVERIFY(needsTokenTypes(c.architecture));
        // The real shapes (resources/configs): SigLIP's 384 / 14 floors to a 27 x 27 table, as num_patches does.
        const ModelConfig hub = loadModelConfig(ROPESCOPE_TEST_DATA "/../../resources/configs/paddleocr-vl.json");
        QCOMPARE(hub.vision.positionEmbeddings, 729);
        QCOMPARE(hub.text.headDim(), 128);
        QCOMPARE(hub.text.mropeSection, (std::vector<int>{16, 24, 24}));
    }

    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("suffix");
        for (const char* s : {"", "_mid", "_multi", "_text"})
            QTest::newRow(*s ? s : "main") << QString(s);
    }
    void matchesTransformers()
    {
        QFETCH(QString, suffix);
        const SafeTensors inputs = SafeTensors::open(fixture("paddleocr-vl-tiny/inputs" + suffix + ".safetensors"));
        const SafeTensors expected = SafeTensors::open(fixture("paddleocr-vl-tiny/expected" + suffix + ".safetensors"));
        auto want = [&](const char* name) { return toTorch(expected, name); };

        Vlm vlm(fixture("paddleocr-vl-tiny"));
        ForwardRequest req = requestFor(inputs);
        req.scheme = geometry::defaultSchemeParams(ownSchemeKind(vlm.config()));
        req.capture.layers = {0, 1, 2};
        req.capture.layerOutputs = true;
        req.capture.allLogits = true;
        req.generate = 5;
        const ForwardResult r = vlm.run(req, /*traceVision=*/true);
        const int64_t L = req.inputIds.numel();

        const auto& table = r.layerTables[0];
        const auto ours = torch::from_blob(const_cast<double*>(table.positions.data()), {3, L}, torch::kFloat64).to(torch::kInt64);
        QVERIFY(torch::equal(ours.unsqueeze(1), want("position_ids")));
        QCOMPARE(static_cast<int64_t>(table.positions.maxCoeff()) + 1 - L, want("rope_deltas").item<int64_t>());
        // transformers' per-axis tables [3, 1, L, 32] before the sections mix them: ours after, so each
        // frequency j is compared with the axis its section gives it (t below 4, h below 10, w above).
        const LayerRotary rotary = vlm.rotaryFor(table, 0, L);
        const auto cosAxes = want("text_rope_cos").squeeze(1), sinAxes = want("text_rope_sin").squeeze(1); // [3, L, 32]
        for (int64_t j = 0; j < 32; ++j) {
            const int64_t f = j % 16, axis = f < 4 ? 0 : f < 10 ? 1 : 2;
            QVERIFY(ropescope::test::maxAbs(rotary.cos.select(1, j), cosAxes[axis].select(1, j)) < 1e-6);
            QVERIFY(ropescope::test::maxAbs(rotary.sin.select(1, j), sinAxes[axis].select(1, j)) < 1e-6);
        }

        if (inputs.find("pixel_values")) {
            const VisionTrace& v = r.vision;
            QVERIFY(torch::equal(v.cuSeqlens.to(torch::kInt64), want("vision_cu_seqlens").to(torch::kInt64)));
            EXPECT_CLOSE(v.patchEmbeds, want("vision_patch_embeds"), kVision, "vision_patch_embeds");
            EXPECT_CLOSE(v.positionEmbeds, want("vision_pos_embeds"), kVision, "vision_pos_embeds");
            EXPECT_CLOSE(v.embeddings, want("vision_embeddings"), kVision, "vision_embeddings");
            const auto emb = torch::cat({v.rotaryFreqs, v.rotaryFreqs}, -1);
            EXPECT_CLOSE(emb.cos(), want("vision_rotary_cos"), kVision, "vision_rotary_cos");
            EXPECT_CLOSE(emb.sin(), want("vision_rotary_sin"), kVision, "vision_rotary_sin");
            EXPECT_CLOSE(torch::stack(v.blockOutputs, 0), want("vision_block_outputs"), kVision, "vision_block_outputs");
            EXPECT_CLOSE(v.postLayernorm, want("vision_post_layernorm"), kVision, "vision_post_layernorm");
            EXPECT_CLOSE(v.projectorPreNorm, want("projector_pre_norm"), kVision, "projector_pre_norm");
            EXPECT_CLOSE(v.projectorMerged, want("projector_merged_input"), kVision, "projector_merged_input");
            EXPECT_CLOSE(r.imageEmbeds, want("image_embeds"), kVision, "image_embeds");
        }
        EXPECT_CLOSE(r.inputsEmbeds.unsqueeze(0), want("inputs_embeds"), kVision, "inputs_embeds");
        EXPECT_DECODER_MATCHES(r, want, kOutputs, kAttention);
    }

    // Without mm_token_type_ids the image pads are not placed: refused in one line, as for GLM-V.
    void tokenTypesAreRequired()
    {
        Vlm vlm(fixture("paddleocr-vl-tiny"));
        ForwardRequest req = requestFor(SafeTensors::open(fixture("paddleocr-vl-tiny/inputs.safetensors")));
        req.tokenTypes = torch::Tensor();
        try {
            vlm.run(req);
            QFAIL("ran without mm_token_type_ids");
        } catch (const ModelError& e) {
            const QString m = e.what();
            QVERIFY2(m.startsWith("mm_token_type_ids: PaddleOCR-VL needs it") && !m.contains('\n'), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestPaddleOcrVlParity)
#include "test_paddleocr_vl_parity.moc"

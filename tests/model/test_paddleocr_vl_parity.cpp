// Parity with Hugging Face transformers 5.3 (eager, float32) on the tiny PaddleOCR-VL fixture in
// tests/data/fixtures/paddleocr-vl-tiny (../shared/fixtures README, "PaddleOCR-VL fixture"): the ERNIE-4.5
// decoder (explicit head_dim, no biases) with Qwen2-VL's M-RoPE, and a SigLIP-NaViT tower (raster-order
// patches, a bilinearly resized position table, a projector merging 2x2 patches). All four cases, every
// tensor the fixture records, through the normal loader and model code, at the fixture README's tolerances.
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/geometry/scheme.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

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
        const ModelConfig hub = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/paddleocr-vl.json");
        QCOMPARE(hub.vision.positionEmbeddings, 729);
        QCOMPARE(hub.text.headDim(), 128);
        QCOMPARE(hub.text.mropeSection, (std::vector<int>{16, 24, 24}));
    }

    // Without mm_token_type_ids the image pads are not placed: refused in one line, as for GLM-V.
    void tokenTypesAreRequired()
    {
        Vlm vlm(fixture("paddleocr-vl-tiny"));
        ForwardRequest req = requestFor(SafeTensors::open(fixture("paddleocr-vl-tiny/inputs.safetensors")));
        req.tokenTypes = at::Tensor();
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

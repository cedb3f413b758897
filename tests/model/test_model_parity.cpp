// Parity with Hugging Face transformers 4.50 (eager, float32) on the tiny Qwen2-VL and Qwen2.5-VL
// fixtures in tests/data/fixtures (README there): every tensor the fixtures hold, loaded through the
// normal checkpoint loader and run through the normal model code with scheme mrope.
#include "geometry/scheme.h"
#include "model/tensor_io.h"
#include "model/vlm.h"

#include <QtTest>

using namespace ropescope;
using namespace ropescope::model;

namespace {

QString fixture(const QString& name)
{
    return QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + name;
}

double maxAbs(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

#define EXPECT_CLOSE(ours, theirs, tolerance, what)                                                                   \
    do {                                                                                                             \
        const auto o_ = (ours);                                                                                      \
        const auto t_ = (theirs);                                                                                    \
        QVERIFY2(o_.sizes() == t_.sizes(), qPrintable(QString("%1: shape differs").arg(what)));                      \
        const double e_ = maxAbs(o_, t_);                                                                            \
        qInfo("%s: max abs error %.3g", qPrintable(QString(what)), e_);                                              \
        QVERIFY2(e_ <= (tolerance), qPrintable(QString("%1: max abs error %2 > %3").arg(what).arg(e_).arg(tolerance))); \
    } while (0)

} // namespace

class TestModelParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("suffix");
        for (const char* m : {"qwen2vl-tiny", "qwen25vl-tiny"})
            for (const char* s : {"", "_mid", "_multi"})
                QTest::newRow(qPrintable(QString("%1%2").arg(m, s))) << QString(m) << QString(s);
    }
    void matchesTransformers()
    {
        QFETCH(QString, model);
        QFETCH(QString, suffix);
        const SafeTensors inputs = SafeTensors::open(fixture(model + "/inputs" + suffix + ".safetensors"));
        const SafeTensors expected = SafeTensors::open(fixture(model + "/expected" + suffix + ".safetensors"));
        auto want = [&](const char* name) { return toTorch(expected, name); };

        Vlm vlm(fixture(model));
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
        // ROPESCOPE_PARITY_SCHEME lets a developer check that the comparison fails for another scheme.
        req.scheme.kind = geometry::schemeFromName(qEnvironmentVariable("ROPESCOPE_PARITY_SCHEME", "mrope").toStdString())
                              .value_or(geometry::SchemeKind::Mrope);
        req.capture.layers = {0, 1};
        req.capture.layerOutputs = true;
        req.capture.allLogits = true;
        req.generate = 5;
        const ForwardResult r = vlm.run(req, /*traceVision=*/true);
        const int64_t L = req.inputIds.numel();

        // Positions: the geometry engine's mrope table is Hugging Face's get_rope_index, exactly.
        const auto& table = r.layerTables[0];
        const auto ours = torch::from_blob(const_cast<double*>(table.positions.data()), {3, L}, torch::kFloat64).to(torch::kInt64);
        QVERIFY(torch::equal(ours.unsqueeze(1), want("position_ids")));
        QCOMPARE(static_cast<int64_t>(table.positions.maxCoeff()) + 1 - L, want("rope_deltas").item<int64_t>());

        EXPECT_CLOSE(r.vision.patchEmbeds, want("vision_patch_embeds"), 1e-4, "vision_patch_embeds");
        EXPECT_CLOSE(r.vision.rotaryFreqs, want("vision_rotary_freqs"), 1e-5, "vision_rotary_freqs");
        EXPECT_CLOSE(torch::stack(r.vision.blockOutputs, 0), want("vision_block_outputs"), 1e-4, "vision_block_outputs");
        QVERIFY(torch::equal(r.vision.cuSeqlens, want("vision_cu_seqlens")));
        if (model == "qwen25vl-tiny") {
            QVERIFY(torch::equal(r.vision.windowIndex.to(torch::kInt64), want("vision_window_index")));
            QVERIFY(torch::equal(r.vision.cuWindowSeqlens, want("vision_cu_window_seqlens")));
        }
        EXPECT_CLOSE(r.imageEmbeds, want("image_embeds"), 1e-4, "image_embeds");
        EXPECT_CLOSE(r.inputsEmbeds.unsqueeze(0), want("inputs_embeds"), 1e-4, "inputs_embeds");
        EXPECT_CLOSE(torch::stack(r.prefill.attentions, 0).unsqueeze(1), want("attentions"), 1e-5, "attentions");
        EXPECT_CLOSE(torch::stack(r.prefill.layerOutputs, 0).unsqueeze(1), want("decoder_layer_outputs"), 1e-4, "decoder_layer_outputs");
        EXPECT_CLOSE(r.prefill.finalNorm.unsqueeze(0), want("final_norm_output"), 1e-4, "final_norm_output");
        EXPECT_CLOSE(r.prefill.logits.unsqueeze(0), want("logits"), 1e-4, "logits");
        QVERIFY2(torch::equal(r.generatedIds.unsqueeze(0), want("generated_ids")), qPrintable(QString::fromStdString(
                                                                                     [&] { std::ostringstream s; s << r.generatedIds; return s.str(); }())));
        EXPECT_CLOSE(r.generatedLogits.unsqueeze(0), want("generated_logits"), 1e-4, "generated_logits");
    }
};

QTEST_APPLESS_MAIN(TestModelParity)
#include "test_model_parity.moc"

// Parity with Hugging Face transformers 5.3 (eager, float32) on the tiny Qwen3.5 fixture in
// tests/data/fixtures/qwen35-tiny (README there): a hybrid decoder of Gated DeltaNet and gated-attention
// layers with partial, interleaved M-RoPE. Every tensor the fixture holds, through the normal loader and
// model code with scheme mrope, at the fixture README's tolerances.
#include "core/model/engine/gated_deltanet.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/parity.h"

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;
using ropescope::test::maxAbs;

namespace {

// The fixture README's tolerances.
constexpr double kOutputs = 3e-4, kAttention = 5e-5, kStates = 1e-4, kVision = 1e-5;

torch::Tensor stackOf(const std::vector<DeltaNetTrace>& traces, torch::Tensor DeltaNetTrace::*member)
{
    std::vector<torch::Tensor> all;
    for (const DeltaNetTrace& t : traces)
        all.push_back(t.*member);
    return torch::stack(all, 0);
}

torch::Tensor stackOf(const std::vector<DeltaNetState>& states, torch::Tensor DeltaNetState::*member)
{
    std::vector<torch::Tensor> all;
    for (const DeltaNetState& s : states)
        all.push_back(s.*member);
    return torch::stack(all, 0);
}

} // namespace

class TestQwen35Parity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void config()
    {
        const ModelConfig c = loadModelConfig(fixture("qwen35-tiny/config.json"));
        QCOMPARE(c.architecture, Architecture::Qwen35);
        QCOMPARE(c.text.attentionLayers(), (std::vector<int>{3, 7}));
        QCOMPARE(c.text.rotaryDim(), 8);
        QCOMPARE(c.text.mropeSection, (std::vector<int>{2, 1, 1}));
        QVERIFY(c.text.mropeInterleaved && c.text.zeroCentredNorm && c.text.attentionOutputGate);
        QVERIFY(c.vision.deepstackBlocks.empty());
    }

    // The chunked closed form against the rule written token by token, across chunk edges, from a state
    // carried in, with decays from nearly none to nearly total.
    void chunkedRuleEqualsTheRecurrence()
    {
        torch::manual_seed(7);
        const int64_t B = 2, H = 3, L = 37, dk = 5, dv = 4;
        auto unit = [](torch::Tensor x) { return x / x.norm(2, -1, true); };
        const auto q = unit(torch::randn({B, H, L, dk})), k = unit(torch::randn({B, H, L, dk})), v = torch::randn({B, H, L, dv});
        const auto g = -torch::rand({B, H, L}) * 4.0, beta = torch::rand({B, H, L});
        const auto s0 = torch::randn({B, H, dk, dv});
        auto S = s0.clone();
        std::vector<torch::Tensor> outs;
        for (int64_t t = 0; t < L; ++t) {
            const auto kt = k.select(2, t), qt = q.select(2, t); // [B, H, dk]
            S = S * g.select(2, t).exp().view({B, H, 1, 1});
            const auto recalled = (S * kt.unsqueeze(-1)).sum(-2); // S^T k
            const auto delta = (v.select(2, t) - recalled) * beta.select(2, t).unsqueeze(-1);
            S = S + kt.unsqueeze(-1) * delta.unsqueeze(-2);
            outs.push_back((S * qt.unsqueeze(-1)).sum(-2));
        }
        const auto want = torch::stack(outs, 2);
        for (int64_t chunk : {1, 4, 16, 64}) {
            torch::Tensor state = s0.clone();
            const auto got = gatedDeltaRule(q, k, v, g, beta, state, chunk);
            EXPECT_CLOSE(got, want, 1e-5, QString("outputs, chunk %1").arg(chunk));
            EXPECT_CLOSE(state, S, 1e-5, QString("state, chunk %1").arg(chunk));
        }
    }

    // The DeltaNet layers have no attention: asking for one names the layers that do.
    void capturingADeltaNetLayerIsRefused()
    {
        Vlm vlm(fixture("qwen35-tiny"));
        const SafeTensors inputs = SafeTensors::open(fixture("qwen35-tiny/inputs.safetensors"));
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
        req.capture.layers = {2};
        try {
            vlm.run(req);
            QFAIL("captured a DeltaNet layer");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("attention layers: 3, 7"), e.what());
        }
    }

    // A Hub checkpoint in shards with the multi-token-prediction head: the head is not loaded, the model is
    // unchanged, and the run says the MTP tensors go unused.
    void mtpTensorsAreIgnoredAndSaid()
    {
        QTemporaryDir dir;
        QVERIFY(QFile::copy(fixture("qwen35-tiny/config.json"), dir.filePath("config.json")));
        QVERIFY(QFile::copy(fixture("qwen35-tiny/model.safetensors"), dir.filePath("model-00001-of-00002.safetensors")));
        SafeTensorsWriter mtp;
        addTensor(mtp, "mtp.fc.weight", torch::ones({64, 128}));
        addTensor(mtp, "mtp.norm.weight", torch::ones({64}));
        QFile shard(dir.filePath("model-00002-of-00002.safetensors"));
        QVERIFY(shard.open(QIODevice::WriteOnly) && shard.write(mtp.bytes()) > 0);
        shard.close();
        QJsonObject map;
        const SafeTensors weights = SafeTensors::open(fixture("qwen35-tiny/model.safetensors"));
        for (const TensorInfo& t : weights.tensors())
            map[QString::fromStdString(t.name)] = "model-00001-of-00002.safetensors";
        for (const char* name : {"mtp.fc.weight", "mtp.norm.weight"})
            map[name] = "model-00002-of-00002.safetensors";
        QFile index(dir.filePath("model.safetensors.index.json"));
        QVERIFY(index.open(QIODevice::WriteOnly) && index.write(QJsonDocument(QJsonObject{{"weight_map", map}}).toJson()) > 0);
        index.close();

        Vlm sharded(dir.path()), plain(fixture("qwen35-tiny"));
        QCOMPARE(QString::fromStdString(sharded.unusedNote()),
                 QString("the checkpoint's 2 multi-token-prediction tensors (mtp.*) are not used: RopeScope decodes one token per step"));
        QVERIFY(plain.unusedNote().empty());
        const SafeTensors inputs = SafeTensors::open(fixture("qwen35-tiny/inputs.safetensors"));
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
        QVERIFY(torch::equal(sharded.run(req).prefill.logits, plain.run(req).prefill.logits));
    }

    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("suffix");
        for (const char* s : {"", "_mid", "_multi", "_video"})
            QTest::newRow(*s ? s : "main") << QString(s);
    }
    void matchesTransformers()
    {
        QFETCH(QString, suffix);
        const SafeTensors inputs = SafeTensors::open(fixture("qwen35-tiny/inputs" + suffix + ".safetensors"));
        const SafeTensors expected = SafeTensors::open(fixture("qwen35-tiny/expected" + suffix + ".safetensors"));
        auto want = [&](const char* name) { return toTorch(expected, name); };
        const bool video = suffix == "_video";

        Vlm vlm(fixture("qwen35-tiny"));
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        if (video) { // the processor's one [T, h, w] row; the engine splits it per frame as later transformers do
            req.videoPixelValues = toTorch(inputs, "pixel_values_videos");
            req.videoGridThw = toTorch(inputs, "video_grid_thw");
        } else {
            req.pixelValues = toTorch(inputs, "pixel_values");
            req.imageGridThw = toTorch(inputs, "image_grid_thw");
        }
        req.scheme.kind = geometry::schemeFromName(qEnvironmentVariable("ROPESCOPE_PARITY_SCHEME", "mrope").toStdString())
                              .value_or(geometry::SchemeKind::Mrope);
        req.capture.layers = vlm.config().text.attentionLayers();
        req.capture.layerOutputs = true;
        req.capture.allLogits = true;
        req.capture.deltaNet = true;
        req.generate = 5;
        const ForwardResult r = vlm.run(req, /*traceVision=*/true);
        const int64_t L = req.inputIds.numel();

        const auto& table = r.layerTables[3];
        const auto ours = torch::from_blob(const_cast<double*>(table.positions.data()), {3, L}, torch::kFloat64).to(torch::kInt64);
        QVERIFY(torch::equal(ours.unsqueeze(1), want("position_ids")));
        QCOMPARE(static_cast<int64_t>(table.positions.maxCoeff()) + 1 - L, want("rope_deltas").item<int64_t>());
        const LayerRotary rotary = rotaryForTable(table, vlm.config().text, torch::kCPU, 0, L);
        EXPECT_CLOSE(rotary.cos, want("text_rope_cos").squeeze(0), 1e-6, "text_rope_cos");
        EXPECT_CLOSE(rotary.sin, want("text_rope_sin").squeeze(0), 1e-6, "text_rope_sin");

        if (video) {
            EXPECT_CLOSE(r.videoEmbeds, want("video_embeds"), kVision, "video_embeds");
        } else {
            EXPECT_CLOSE(r.vision.patchEmbeds, want("vision_patch_embeds"), kVision, "vision_patch_embeds");
            EXPECT_CLOSE(r.vision.rotaryFreqs, want("vision_rotary_freqs"), kVision, "vision_rotary_freqs");
            EXPECT_CLOSE(torch::stack(r.vision.blockOutputs, 0), want("vision_block_outputs"), kVision, "vision_block_outputs");
            EXPECT_CLOSE(r.imageEmbeds, want("image_embeds"), kVision, "image_embeds");
        }
        QVERIFY(r.deepstackEmbeds.empty());
        EXPECT_CLOSE(r.inputsEmbeds.unsqueeze(0), want("inputs_embeds"), kVision, "inputs_embeds");

        const DecoderOutput& p = r.prefill;
        QCOMPARE(p.deltaTraces.size(), size_t(6));
        EXPECT_CLOSE(stackOf(p.deltaTraces, &DeltaNetTrace::g), want("deltanet_g"), kAttention, "deltanet_g");
        EXPECT_CLOSE(stackOf(p.deltaTraces, &DeltaNetTrace::beta), want("deltanet_beta"), kAttention, "deltanet_beta");
        EXPECT_CLOSE(stackOf(p.deltaTraces, &DeltaNetTrace::core), want("deltanet_core_outputs"), kAttention, "deltanet_core_outputs");
        EXPECT_CLOSE(stackOf(p.deltaStates, &DeltaNetState::recurrent), want("deltanet_recurrent_states"), kStates,
                     "deltanet_recurrent_states");
        EXPECT_CLOSE(stackOf(p.deltaStates, &DeltaNetState::conv), want("deltanet_conv_states"), kStates, "deltanet_conv_states");
        EXPECT_CLOSE(torch::stack(p.attentions, 0).unsqueeze(1), want("attentions"), kAttention, "attentions");
        EXPECT_CLOSE(torch::stack(p.layerOutputs, 0).unsqueeze(1), want("decoder_layer_outputs"), kOutputs, "decoder_layer_outputs");
        EXPECT_CLOSE(p.finalNorm.unsqueeze(0), want("final_norm_output"), kOutputs, "final_norm_output");
        EXPECT_CLOSE(p.logits.unsqueeze(0), want("logits"), kOutputs, "logits");
        QVERIFY(torch::equal(r.generatedIds.unsqueeze(0), want("generated_ids")));
        EXPECT_CLOSE(r.generatedLogits.unsqueeze(0), want("generated_logits"), kOutputs, "generated_logits");
    }
};

QTEST_APPLESS_MAIN(TestQwen35Parity)
#include "test_qwen35_parity.moc"

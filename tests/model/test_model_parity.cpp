// Parity with Hugging Face transformers (eager, float32) on the tiny Qwen2-VL and Qwen2.5-VL (4.50) and
// Qwen3-VL (5.17) fixtures in tests/data/fixtures (README there): every tensor the fixtures hold, loaded
// through the normal checkpoint loader and run through the normal model code with scheme mrope (whose
// allocation is the model's own: sectioned, or interleaved for Qwen3-VL).
#include "core/geometry/scheme.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/token_layout.h"
#include "core/model/engine/vlm.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/parity.h"

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;
using ropescope::test::maxAbs;

class TestModelParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void visionCacheSampleStaysInsideLargeInputs()
    {
        // The vision cache hashes an even sample of the pixels; a float32 linspace rounded indices past 2^24 values
        // beyond the end ("index out of range" on three 1-megapixel images). Exact at 2^24 + 1 and beyond.
        for (const int64_t n : {int64_t(4097), (int64_t(1) << 24) + 1, (int64_t(1) << 31) + 7}) {
            const torch::Tensor at = ropescope::model::evenSampleIndices(n, 4096);
            QCOMPARE(at.scalar_type(), torch::kInt64);
            QCOMPARE(at.numel(), int64_t(4096));
            QCOMPARE(at[0].item<int64_t>(), int64_t(0));
            QCOMPARE(at[4095].item<int64_t>(), n - 1);
            QVERIFY((at.slice(0, 1) > at.slice(0, 0, 4095)).all().item<bool>()); // strictly increasing
        }
    }

    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("suffix");
        for (const char* m : {"qwen2vl-tiny", "qwen25vl-tiny", "qwen3vl-tiny"})
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
        auto holds = [&](const char* name) { return expected.find(name) != nullptr; };

        Vlm vlm(fixture(model));
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
        // ROPESCOPE_PARITY_SCHEME lets a developer check that the comparison fails for another scheme.
        req.scheme.kind = geometry::schemeFromName(qEnvironmentVariable("ROPESCOPE_PARITY_SCHEME", "mrope").toStdString())
                              .value_or(geometry::SchemeKind::Mrope);
        for (int i = 0; i < vlm.language().layers(); ++i)
            req.capture.layers.push_back(i);
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

        // The decoder's rotary tables. Qwen3-VL's fixture holds them after the interleaved recomposition
        // [1, L, d]; the Qwen2 fixtures per axis [3, 1, L, d], mixed here as Hugging Face does: chunk i of
        // the split by mrope_section * 2 comes from axis i % 3.
        const LayerRotary rotary = rotaryForTable(table, vlm.config().text, torch::kCPU, 0, L);
        auto mixed = [&](torch::Tensor perAxis) {
            if (perAxis.dim() == 3)
                return perAxis.squeeze(0);
            std::vector<int64_t> sizes;
            for (int k = 0; k < 2; ++k)
                for (int s : vlm.config().text.mropeSection)
                    sizes.push_back(s);
            const auto chunks = perAxis.squeeze(1).split_with_sizes(sizes, -1);
            std::vector<torch::Tensor> parts;
            for (size_t i = 0; i < chunks.size(); ++i)
                parts.push_back(chunks[i][static_cast<int64_t>(i % 3)]);
            return torch::cat(parts, -1);
        };
        EXPECT_CLOSE(rotary.cos, mixed(want("text_rope_cos")), 1e-5, "text_rope_cos");
        EXPECT_CLOSE(rotary.sin, mixed(want("text_rope_sin")), 1e-5, "text_rope_sin");
        EXPECT_CLOSE(r.vision.patchEmbeds, want("vision_patch_embeds"), 1e-4, "vision_patch_embeds");
        if (holds("vision_rotary_freqs"))
            EXPECT_CLOSE(r.vision.rotaryFreqs, want("vision_rotary_freqs"), 1e-5, "vision_rotary_freqs");
        EXPECT_CLOSE(torch::stack(r.vision.blockOutputs, 0), want("vision_block_outputs"), 1e-4, "vision_block_outputs");
        if (holds("vision_cu_seqlens"))
            QVERIFY(torch::equal(r.vision.cuSeqlens, want("vision_cu_seqlens")));
        if (model == "qwen25vl-tiny") {
            QVERIFY(torch::equal(r.vision.windowIndex.to(torch::kInt64), want("vision_window_index")));
            QVERIFY(torch::equal(r.vision.cuWindowSeqlens, want("vision_cu_window_seqlens")));
        }
        EXPECT_CLOSE(r.imageEmbeds, want("image_embeds"), 1e-4, "image_embeds");
        QCOMPARE(r.deepstackEmbeds.size(), holds("deepstack_embeds") ? size_t(want("deepstack_embeds").size(0)) : size_t(0));
        if (holds("deepstack_embeds"))
            EXPECT_CLOSE(torch::stack(r.deepstackEmbeds, 0), want("deepstack_embeds"), 1e-4, "deepstack_embeds");
        EXPECT_CLOSE(r.inputsEmbeds.unsqueeze(0), want("inputs_embeds"), 1e-4, "inputs_embeds");
        EXPECT_CLOSE(torch::stack(r.prefill.attentions, 0).unsqueeze(1), want("attentions"), 1e-5, "attentions");
        EXPECT_CLOSE(torch::stack(r.prefill.layerOutputs, 0).unsqueeze(1), want("decoder_layer_outputs"), 1e-4, "decoder_layer_outputs");
        EXPECT_CLOSE(r.prefill.finalNorm.unsqueeze(0), want("final_norm_output"), 1e-4, "final_norm_output");
        EXPECT_CLOSE(r.prefill.logits.unsqueeze(0), want("logits"), 1e-4, "logits");
        QVERIFY2(torch::equal(r.generatedIds.unsqueeze(0), want("generated_ids")), qPrintable(QString::fromStdString([&] {
                     std::ostringstream s;
                     s << r.generatedIds;
                     return s.str();
                 }())));
        if (holds("generated_logits"))
            EXPECT_CLOSE(r.generatedLogits.unsqueeze(0), want("generated_logits"), 1e-4, "generated_logits");
    }

    // transformers 5 writes rope_parameters (theta inside) where the Hub's configs have rope_scaling and a
    // separate rope_theta: both must give the same model. And the allocation matters: the same model run
    // with Qwen2-VL's sectioned allocation gives other logits.
    void qwen3ConfigForms()
    {
        const QString dir = fixture("qwen3vl-tiny");
        QFile hub(dir + "/config.json");
        QVERIFY(hub.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(hub.readAll()).object();
        QJsonObject text = root["text_config"].toObject();
        QJsonObject rope = text["rope_scaling"].toObject();
        rope["rope_theta"] = text["rope_theta"];
        text.remove("rope_scaling");
        text.remove("rope_theta");
        text["rope_parameters"] = rope;
        root["text_config"] = text;
        QTemporaryDir tmp;
        QFile v5(tmp.filePath("config.json"));
        QVERIFY(v5.open(QIODevice::WriteOnly) && v5.write(QJsonDocument(root).toJson()) > 0);
        v5.close();
        QVERIFY(QFile::copy(dir + "/model.safetensors", tmp.filePath("model.safetensors")));

        const SafeTensors inputs = SafeTensors::open(dir + "/inputs_multi.safetensors");
        ForwardRequest req;
        req.inputIds = toTorch(inputs, "input_ids").flatten();
        req.pixelValues = toTorch(inputs, "pixel_values");
        req.imageGridThw = toTorch(inputs, "image_grid_thw");
        req.capture.allLogits = true;
        Vlm fromHub(dir), fromV5(tmp.path());
        QCOMPARE(fromV5.config().text.ropeTheta, 5e6);
        QCOMPARE(fromV5.config().text.mropeSection, (std::vector<int>{6, 5, 5}));
        const auto logits = fromHub.run(req).prefill.logits;
        QVERIFY(torch::equal(logits, fromV5.run(req).prefill.logits));

        QCOMPARE(fromHub.schemeForModel(req.scheme).allocationKind, std::optional(geometry::FrequencyAllocation::Kind::InterleavedMrope));
        req.scheme.allocationKind = geometry::FrequencyAllocation::Kind::Sectioned;
        const double change = maxAbs(fromHub.run(req).prefill.logits, logits);
        qInfo("sectioned instead of interleaved: logits change by %.3g", change);
        QVERIFY(change > 1e-3);
    }

    // Qwen3-VL's videos: each temporal patch is its own (1, h, w) grid between timestamp text, as its
    // get_rope_index splits video_grid_thw; Qwen2-VL keeps one (t, h, w) grid.
    void qwen3VideoFramesAreSeparateGrids()
    {
        const ModelConfig q3 = loadModelConfig(fixture("qwen3vl-tiny/config.json"));
        const int64_t vs = q3.visionStart, ve = q3.visionEnd, pad = q3.videoToken;
        // text, <vs>, "<0.5 seconds>" (2 tokens), frame 0, "<1.5 seconds>", frame 1, <ve>, text
        std::vector<int64_t> ids{1, 2, vs, 10, 11, vs, pad, pad, pad, pad, ve, 12, 13, vs, pad, pad, pad, pad, ve, ve, 3};
        const geometry::Layout layout = layoutFromTokens(ids, {}, {{2, 4, 4}}, q3);
        QCOMPARE(QString::fromStdString(layout.toString()), QString("text:6,video:1x2x2,text:4,video:1x2x2,text:3"));
        geometry::SchemeParams p;
        p.rotary.headDim = q3.text.headDim();
        const auto table = geometry::buildPositionTable(layout, p);
        // Hugging Face: frame 0 at s = 6 -> (6, 6..7, 6..7); text resumes at 8; frame 1 at s = 12.
        const std::vector<std::array<int, 3>> want{{0, 0, 0},    {5, 5, 5},    {6, 6, 6},    {6, 7, 7},    {8, 8, 8},
                                                   {11, 11, 11}, {12, 12, 12}, {12, 13, 13}, {14, 14, 14}, {16, 16, 16}};
        const std::vector<int> rows{0, 5, 6, 9, 10, 13, 14, 17, 18, 20};
        for (size_t k = 0; k < rows.size(); ++k)
            for (int c = 0; c < 3; ++c)
                QCOMPARE(table.positions(rows[k], c), double(want[k][static_cast<size_t>(c)]));

        // The frames' token runs must match the grid: a short frame is named.
        ids.erase(ids.begin() + 6);
        QVERIFY_THROWS_EXCEPTION(ModelError, layoutFromTokens(ids, {}, {{2, 4, 4}}, q3));
        // Qwen2-VL reads the same grid as one 2-frame run of 8 tokens, so the split run is refused there.
        ModelConfig q2 = q3;
        q2.architecture = Architecture::Qwen2VL;
        QVERIFY_THROWS_EXCEPTION(ModelError, layoutFromTokens(ids, {}, {{2, 4, 4}}, q2));
    }

    // A Qwen3-VL video of two temporal patches is two one-frame grids: the vision tower attends within a
    // frame and repeats the position table and rotary per frame, the decoder places each frame like an
    // image. So the video, fed as pixel_values_videos, gives the logits of the same frames fed as two
    // images with the same text between them (no reference fixture has a video; this pins the wiring).
    void qwen3VideoEqualsItsFramesAsImages()
    {
        Vlm vlm(fixture("qwen3vl-tiny"));
        const ModelConfig& c = vlm.config();
        const auto frame0 = toTorch(SafeTensors::open(fixture("qwen3vl-tiny/inputs.safetensors")), "pixel_values"); // grid (1,4,6)
        const auto pixels = torch::cat({frame0, frame0.flip(0) * 0.5}, 0);
        auto prompt = [&](int64_t pad) {
            std::vector<int64_t> ids{1, 2, c.visionStart, 10, 11, c.visionStart};
            ids.insert(ids.end(), 6, pad);
            for (int64_t id : {int64_t(c.visionEnd), int64_t(12), int64_t(c.visionStart)})
                ids.push_back(id);
            ids.insert(ids.end(), 6, pad);
            for (int64_t id : {int64_t(c.visionEnd), int64_t(c.visionEnd), int64_t(3), int64_t(4)})
                ids.push_back(id);
            return torch::tensor(ids, torch::kInt64);
        };
        ForwardRequest images, video;
        images.inputIds = prompt(c.imageToken);
        images.pixelValues = pixels;
        images.imageGridThw = torch::tensor({1, 4, 6, 1, 4, 6}, torch::kInt64).view({2, 3});
        images.capture.allLogits = video.capture.allLogits = true;
        video.inputIds = prompt(c.videoToken);
        video.videoPixelValues = pixels;
        video.videoGridThw = torch::tensor({2, 4, 6}, torch::kInt64).view({1, 3});
        const ForwardResult a = vlm.run(images), b = vlm.run(video);
        QCOMPARE(QString::fromStdString(b.layout.toString()), QString("text:6,video:1x2x3,text:3,video:1x2x3,text:4"));
        QVERIFY(a.layerTables[0].positions == b.layerTables[0].positions);
        EXPECT_CLOSE(b.videoEmbeds, a.imageEmbeds, 1e-5, "video embeds vs image embeds");
        EXPECT_CLOSE(torch::stack(b.deepstackEmbeds), torch::stack(a.deepstackEmbeds), 1e-5, "deepstack");
        EXPECT_CLOSE(b.prefill.logits, a.prefill.logits, 1e-5, "logits");
        // Without the video pixels the run names what is missing.
        video.videoPixelValues = torch::Tensor();
        try {
            vlm.run(video);
            QFAIL("a video without pixels ran");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("pixel_values_videos"), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestModelParity)
#include "test_model_parity.moc"

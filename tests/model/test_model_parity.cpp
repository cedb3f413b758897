// Parity with Hugging Face transformers (eager, float32) on the tiny Qwen2-VL and Qwen2.5-VL (4.50) and
// Qwen3-VL (5.17) fixtures in tests/data/fixtures (README there): every tensor the fixtures hold, loaded
// through the normal checkpoint loader and run through the normal model code with scheme mrope (whose
// allocation is the model's own: sectioned, or interleaved for Qwen3-VL).
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "core/geometry/scheme.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/token_layout.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

#include "tests/support/parity.h"
#endif

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

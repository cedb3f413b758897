// Gemma's vision inputs outside the parity harness (test_family_parity holds the towers' parity): the image
// processors against numbers derived by hand from transformers' formulas and against the fixtures' own pixels, the
// conversion of the processors' outputs to the tower's rows, and bad input refused in one line.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "core/model/engine/image_processor.h"
#include "core/model/engine/processor_inputs.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

#include <cmath>

#include "tests/support/parity.h"
#endif

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;

namespace {

// The uint8 picture a processor's [0, 1] pixels (`scale` x + `shift`: Gemma 3's are normalised) came from: [3, h, w].
QImage pictureOf(const torch::Tensor& chw, double scale = 1.0, double shift = 0.0)
{
    const auto bytes = ((chw * scale + shift) * 255).round().clamp(0, 255).to(torch::kUInt8).permute({1, 2, 0}).contiguous();
    QImage image(static_cast<int>(bytes.size(1)), static_cast<int>(bytes.size(0)), QImage::Format_RGB888);
    for (int y = 0; y < image.height(); ++y)
        std::memcpy(image.scanLine(y), bytes[y].data_ptr(), static_cast<size_t>(image.width()) * 3);
    return image;
}

// A Gemma 4 prompt of one image of `tokens` soft tokens with grid (1, h, w) and random pixels in [0, 1].
ForwardRequest gemma4Prompt(const ModelConfig& c, int64_t tokens, int64_t h, int64_t w)
{
    std::vector<int64_t> ids{2, 10, c.visionStart};
    ids.insert(ids.end(), static_cast<size_t>(tokens), c.imageToken);
    ids.insert(ids.end(), {c.visionEnd, 11});
    ForwardRequest req;
    req.inputIds = torch::tensor(ids, torch::kInt64);
    std::vector<int64_t> types(ids.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i)
        types[i] = ids[i] == c.imageToken ? 1 : 0;
    req.tokenTypes = torch::tensor(types, torch::kInt64);
    req.pixelValues = torch::rand({h * w, c.vision.patchDim()});
    req.imageGridThw = torch::tensor({int64_t(1), h, w}).view({1, 3});
    return req;
}

// The one line a run refuses `req` with (empty if it ran).
QString refusal(Vlm& vlm, const ForwardRequest& req)
{
    try {
        vlm.run(req);
    } catch (const BadRequest& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestGemmaVision : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // get_aspect_ratio_preserving_size by hand (patch 16, pooling 3, side multiple 48):
    //  - 280 tokens: budget 2520 patches = 645120 px. 1000 x 1000: factor sqrt(0.64512) = 0.8032, 803.2 / 48 = 16.7
    //    -> 768 x 768 (48 x 48 patches, 256 tokens). 480 x 640 (h x w): factor sqrt(2.1) = 1.4491, 695.6 / 48 = 14.49
    //    -> 672, 927.5 / 48 = 19.32 -> 912 (266 tokens). 10 x 4000: h rounds to 0 -> 48; w = min(400 * 48,
    //    280 * 48) = 13440 (280 tokens, exactly the budget).
    //  - 70 tokens: 630 patches = 161280 px. 1000 x 1000: factor 0.40160, 401.6 / 48 = 8.37 -> 384 (64 tokens).
    //  - The fixtures' tiny tower (patch 4, pooling 3, side 12) at 6 tokens: 54 patches = 864 px; 24 x 36 is
    //    already 864 px: factor 1 -> 24 x 36 unchanged.
    void gemma4ResizeFollowsTheFormula()
    {
        QCOMPARE(gemma4ResizedSize(1000, 1000, 16, 2520, 3), (std::pair<int64_t, int64_t>{768, 768}));
        QCOMPARE(gemma4ResizedSize(480, 640, 16, 2520, 3), (std::pair<int64_t, int64_t>{672, 912}));
        QCOMPARE(gemma4ResizedSize(10, 4000, 16, 2520, 3), (std::pair<int64_t, int64_t>{48, 13440}));
        QCOMPARE(gemma4ResizedSize(4000, 10, 16, 2520, 3), (std::pair<int64_t, int64_t>{13440, 48}));
        QCOMPARE(gemma4ResizedSize(1000, 1000, 16, 630, 3), (std::pair<int64_t, int64_t>{384, 384}));
        QCOMPARE(gemma4ResizedSize(24, 36, 4, 54, 3), (std::pair<int64_t, int64_t>{24, 36}));
        // A budget under one pooling kernel (4 patches: 1024 px, factor 3.2 on 10 x 10) rounds both sides to 0.
        QVERIFY_THROWS_EXCEPTION(ModelError, gemma4ResizedSize(10, 10, 16, 4, 3));
        // The processor's soft-token count of a real-size image: (672 / 48) * (912 / 48) = 14 * 19.
        const ModelConfig c = loadModelConfig(fixture("gemma4-tiny/config.json"));
        VisionConfig big = c.vision;
        big.patchSize = 16;
        PreprocessOptions o = defaultPreprocessOptions(c);
        o.maxSoftTokens = 280;
        QImage photo(640, 480, QImage::Format_RGB888);
        photo.fill(Qt::darkCyan);
        const ProcessedImage p = preprocessImage(photo, big, o);
        QCOMPARE(p.tokens(), 266);
        QCOMPARE(p.resizedHeight, 672);
        QCOMPARE(p.resizedWidth, 912);
        QCOMPARE(p.pixels.sizes(), (c10::IntArrayRef{42 * 57, 16 * 16 * 3}));
        QVERIFY(torch::equal(p.grid, torch::tensor({int64_t(1), int64_t(42), int64_t(57)}).view({1, 3})));
    }

    // An image whose resize is the identity gives exactly the fixture's pixels (transformers' own processor, x / 255
    // in float32, patches (py, px, c) in raster order), and the fixture's processed input converts to the same rows.
    void gemma4PixelsEqualTheProcessors()
    {
        const ModelConfig c = loadModelConfig(fixture("gemma4-tiny/config.json"));
        const SafeTensors in = SafeTensors::open(fixture("gemma4-tiny/inputs.safetensors"));
        const PatchRows rows = gemma4PatchRows(toTorch(in, "pixel_values"), toTorch(in, "image_position_ids"), c.vision);
        QVERIFY(torch::equal(rows.grid, torch::tensor({int64_t(1), int64_t(6), int64_t(9)}).view({1, 3})));
        // The image (24 x 36 px) back from its patches: [54, (py, px, c)] -> [3, 24, 36].
        const auto chw = rows.pixels.view({6, 9, 4, 4, 3}).permute({4, 0, 2, 1, 3}).reshape({3, 24, 36});
        PreprocessOptions o = defaultPreprocessOptions(c);
        o.maxSoftTokens = 6;
        const ProcessedImage p = preprocessImage(pictureOf(chw), c.vision, o);
        QVERIFY(torch::equal(p.grid, rows.grid));
        QVERIFY(torch::equal(p.pixels, rows.pixels)); // bit for bit
        QCOMPARE(p.tokens(), 6);
    }

    // Gemma 3: a 24 x 24 picture (the tower's image_size) is not resampled; rescaled and normalised it is the fixture's
    // pixel_values, as rows in (c, py, px) order.
    void gemma3PixelsEqualTheProcessors()
    {
        const ModelConfig c = loadModelConfig(fixture("gemma3-tiny/config.json"));
        const SafeTensors in = SafeTensors::open(fixture("gemma3-tiny/inputs.safetensors"));
        const auto pixels = toTorch(in, "pixel_values"); // [1, 3, 24, 24], (k / 255 - 0.5) / 0.5
        const PatchRows rows = gemma3PatchRows(pixels, c.vision);
        QVERIFY(torch::equal(rows.grid, torch::tensor({int64_t(1), int64_t(6), int64_t(6)}).view({1, 3})));
        QVERIFY(torch::equal(rows.pixels[7], pixels[0].narrow(1, 4, 4).narrow(2, 4, 4).flatten())); // patch (1, 1)
        const ProcessedImage p = preprocessImage(pictureOf(pixels[0], 0.5, 0.5), c.vision, defaultPreprocessOptions(c));
        QVERIFY(torch::equal(p.grid, rows.grid));
        QVERIFY2(test::maxAbs(p.pixels, rows.pixels) < 1e-6, "the normalised pixels differ");
        QCOMPARE(p.tokens(), 9);
        // Any other size is resized to image_size x image_size.
        QImage wide(56, 40, QImage::Format_RGB888);
        wide.fill(Qt::gray);
        const ProcessedImage q = preprocessImage(wide, c.vision, defaultPreprocessOptions(c));
        QCOMPARE(q.resizedWidth, 24);
        QCOMPARE(q.resizedHeight, 24);
        QVERIFY_THROWS_EXCEPTION(ModelError, preprocessVideo({wide}, c.vision, defaultPreprocessOptions(c)));
    }

    void preprocessorConfigs()
    {
        const ModelConfig g4 = loadModelConfig(fixture("gemma4-tiny/config.json"));
        const ModelConfig g3 = loadModelConfig(fixture("gemma3-tiny/config.json"));
        QCOMPARE(defaultPreprocessOptions(g4).maxSoftTokens, 70); // the config's vision_soft_tokens_per_image
        const PreprocessOptions nested = parsePreprocessConfig(
            R"({"image_processor": {"max_soft_tokens": 140, "patch_size": 4}, "video_processor": {"max_soft_tokens": 280}})", "p.json", g4);
        QCOMPARE(nested.maxSoftTokens, 140);
        QCOMPARE(nested.maxSoftTokensVideo, 280);
        QCOMPARE(parsePreprocessConfig(R"({"max_soft_tokens": 560})", "p.json", g4).maxSoftTokens, 560);
        auto refusal = [](const QByteArray& json, const ModelConfig& c) {
            try {
                parsePreprocessConfig(json, "p.json", c);
            } catch (const BadInputFile& e) {
                return QString::fromStdString(e.what());
            }
            return QString();
        };
        QVERIFY(refusal(R"({"max_soft_tokens": 100})", g4).contains("70, 140, 280, 560, 1120"));
        QVERIFY(refusal(R"({"patch_size": 16})", g4).contains("vision_config.patch_size is 4"));
        QVERIFY(refusal(R"({"do_pan_and_scan": true})", g3).contains("pan-and-scan"));
        QVERIFY(refusal(R"({"size": {"height": 896, "width": 896}})", g3).contains("vision_config.image_size is 24"));
        QCOMPARE(parsePreprocessConfig(R"({"do_pan_and_scan": null, "image_mean": [0.1, 0.2, 0.3]})", "p.json", g3).mean[2], 0.3f);
    }

    // Processor outputs the tower cannot take are refused naming the tensor and the image.
    void processorOutputsAreChecked()
    {
        const ModelConfig c = loadModelConfig(fixture("gemma4-tiny/config.json"));
        const SafeTensors in = SafeTensors::open(fixture("gemma4-tiny/inputs_multi.safetensors"));
        const auto pixels = toTorch(in, "pixel_values"), positions = toTorch(in, "image_position_ids");
        const PatchRows rows = gemma4PatchRows(pixels, positions, c.vision);
        QCOMPARE(rows.pixels.size(0), int64_t(54 + 36));
        QVERIFY(
            torch::equal(rows.grid, torch::tensor({int64_t(1), int64_t(9), int64_t(6), int64_t(1), int64_t(3), int64_t(12)}).view({2, 3})));
        auto refusal = [&](const torch::Tensor& p, const VisionConfig& v) {
            try {
                gemma4PatchRows(pixels, p, v);
            } catch (const BadRequest& e) {
                return QString::fromStdString(e.what());
            }
            return QString();
        };
        VisionConfig small = c.vision;
        small.positionTableSide = 10; // image 1 is 12 patches wide
        QVERIFY(refusal(positions, small).contains("image_position_ids: image 1 has a patch at (x, y) = (11, 2), outside"));
        auto swapped = positions.clone();
        swapped[0][0][0] = 1;
        swapped[0][1][0] = 0;
        QVERIFY(refusal(swapped, c.vision).contains("image 0: the valid patches are not a whole raster grid"));
        auto half = positions.clone();
        half[1][5][1] = -1;
        QVERIFY(refusal(half, c.vision).contains("negative position other than the padding"));
        QVERIFY_THROWS_EXCEPTION(BadRequest, gemma4PatchRows(pixels.narrow(2, 0, 47), positions, c.vision));
        QVERIFY_THROWS_EXCEPTION(BadRequest, gemma3PatchRows(pixels, loadModelConfig(fixture("gemma3-tiny/config.json")).vision));
    }

    // Bad input to a run: one line naming it, never a crash.
    void badInputIsRefusedInOneLine()
    {
        Vlm vlm(fixture("gemma4-tiny"));
        const ModelConfig& c = vlm.config();
        QVERIFY(refusal(vlm, gemma4Prompt(c, 6, 6, 9)).isEmpty()); // the well-formed prompt runs
        // Positions past the table: a grid 66 patches wide (x up to 65 of 64).
        QVERIFY2(refusal(vlm, gemma4Prompt(c, 22, 3, 66)).contains("outside the 64 of Gemma 4's position table"),
                 qPrintable(refusal(vlm, gemma4Prompt(c, 22, 3, 66))));
        ForwardRequest nan = gemma4Prompt(c, 6, 6, 9);
        nan.pixelValues[3][7] = std::nan("");
        QCOMPARE(refusal(vlm, nan), QString("pixel_values: holds NaN or infinite values"));
        // Not whole 3 x 3 pooling kernels: 4 x 9 patches.
        const QString kernels = refusal(vlm, gemma4Prompt(c, 4, 4, 9));
        QVERIFY2(kernels.startsWith("image_grid_thw:") && kernels.contains("divisible by 3") && !kernels.contains('\n'),
                 qPrintable(kernels));
        // Soft tokens (6) and image tokens (5) that do not match.
        ForwardRequest fewer = gemma4Prompt(c, 5, 6, 9);
        const QString mismatch = refusal(vlm, fewer);
        QVERIFY2(!mismatch.isEmpty() && !mismatch.contains('\n'), qPrintable(mismatch));
        // Rows that are not the grid's.
        ForwardRequest rows = gemma4Prompt(c, 6, 6, 9);
        rows.pixelValues = rows.pixelValues.narrow(0, 0, 50);
        QVERIFY(refusal(vlm, rows).contains("50 patches but image_grid_thw describes 54"));
        qInfo("refusals: %s | %s", qPrintable(kernels), qPrintable(mismatch));
    }
};

QTEST_GUILESS_MAIN(TestGemmaVision)
#include "test_gemma_vision.moc"

// Gemma prompts and the views' masks (issue 73 §2, §3): Gemma 3's and Gemma 4's chat templates as their processors
// expand them, token names taken from the tokenizer by the config's ids, Gemma 3's video and Gemma 4's audio refused
// in one line; and the mask codes the attention views mark (keyMasks) against the fixtures' own masks and an
// independent count on the `_long` prompts, whose image block the sliding window cuts.
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them.
#ifndef Q_MOC_RUN
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/layer_masks.h"
#include "core/model/engine/preprocess_config.h"
#include "core/model/engine/vlm.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/safetensors.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/tokenizer.h"
#include "tests/support/parity.h"

#include <torch/types.h>

#include <QColor>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#endif

using namespace ropescope::model;

namespace {

Tokenizer tinyTokenizer(const QString& family)
{
    return Tokenizer::load(QString(ROPESCOPE_TEST_DATA) + "/attend/" + family + "_tokenizer.json");
}

std::vector<int64_t> inputIds(const QString& fixture, const QString& suffix)
{
    const SafeTensors t = SafeTensors::open(ropescope::test::fixture(fixture) + "/inputs" + suffix + ".safetensors");
    const torch::Tensor ids = toTorch(t, "input_ids").reshape({-1}).to(torch::kInt64).contiguous();
    return std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
}

// The rule the fixtures' README gives, written out by hand: a sliding layer sees the window's keys up to the query,
// and (where blocks are open) the rest of the query's image block; a full layer sees every earlier key (and, Gemma 3,
// its block). 0 seen, 1 seen through the block, 2 hidden by the window, 3 hidden by causality.
int expectedCode(const std::vector<int64_t>& ids, int64_t q, int64_t k, int window, bool blocksOpen, int64_t imageToken)
{
    const auto blockOf = [&](int64_t i) { // the first index of i's run of image tokens, or -1
        if (ids[static_cast<size_t>(i)] != imageToken)
            return int64_t(-1);
        while (i > 0 && ids[static_cast<size_t>(i - 1)] == imageToken)
            --i;
        return i;
    };
    const bool sameBlock = blocksOpen && blockOf(q) >= 0 && blockOf(q) == blockOf(k);
    const bool inWindow = window == 0 || k > q - window;
    if (k <= q)
        return inWindow ? 0 : 2;
    return sameBlock ? 1 : 3;
}

QImage gradient(int width, int height)
{
    QImage image(width, height, QImage::Format_RGB888);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            image.setPixelColor(x, y, QColor(x * 255 / width, y * 255 / height, (x * y) % 256));
    return image;
}

// The message of what `f` throws as E, or "" when it throws nothing.
template <class E, class F> QString thrown(F f)
{
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestGemmaPrompts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Gemma 3: <bos>, the user turn with each image as Gemma3Processor expands <start_of_image>, the question trimmed,
    // then the model's turn; the ids through the tiny tokenizer are the fixture's special ids.
    void gemma3ImagePrompt()
    {
        const Tokenizer tokenizer = tinyTokenizer("gemma3");
        const QString prompt = imagePrompt(tokenizer, "  What colour is the circle ? ", {3, 2}, ChatTemplate::Gemma3);
        const QString image3 = "\n\n<start_of_image>" + QString("<image_soft_token>").repeated(3) + "<end_of_image>\n\n";
        const QString image2 = "\n\n<start_of_image>" + QString("<image_soft_token>").repeated(2) + "<end_of_image>\n\n";
        QCOMPARE(prompt,
                 "<bos><start_of_turn>user\n" + image3 + image2 + "What colour is the circle ?<end_of_turn>\n<start_of_turn>model\n");
        const std::vector<int64_t> ids = tokenizer.encode(imagePrompt(tokenizer, "what is this", {2}, ChatTemplate::Gemma3));
        // bos, <start_of_turn>, user, "\n\n\n" (the turn's newline and the image's), boi, 2 x image, eoi, "\n\n", 3 words,
        // <end_of_turn>, "\n", <start_of_turn>, model, "\n"
        const std::vector<int64_t> expected{2,
                                            105,
                                            *tokenizer.tokenId("user"),
                                            109,
                                            248,
                                            250,
                                            250,
                                            249,
                                            108,
                                            *tokenizer.tokenId("what"),
                                            *tokenizer.tokenId("is"),
                                            *tokenizer.tokenId("this"),
                                            106,
                                            107,
                                            105,
                                            *tokenizer.tokenId("model"),
                                            107};
        QCOMPARE(ids, expected);
    }

    // Gemma 4 (the template inferred from its processor and turn tokens): boi, n soft tokens, eoi per image; a video's
    // frames "mm:ss <boi><video> x n<eoi>" joined by spaces, at 2 frames a second.
    void gemma4Prompts()
    {
        const Tokenizer tokenizer = tinyTokenizer("gemma4");
        QCOMPARE(imagePrompt(tokenizer, "what is this?", {2}, ChatTemplate::Gemma4),
                 QString("<bos><|turn>user\n<|image><|image|><|image|><image|>what is this?<turn|>\n<|turn>model\n"));
        QCOMPARE(videoPrompt(tokenizer, "q", 3, 1, 1, ChatTemplate::Gemma4),
                 QString("<bos><|turn>user\n00:00 <|image><|video|><image|> 00:00 <|image><|video|><image|> 00:01 "
                         "<|image><|video|><image|>q<turn|>\n<|turn>model\n"));
        // A minute and a half in: "01:30".
        const QString late = videoPrompt(tokenizer, "q", 182, 1, 1, ChatTemplate::Gemma4);
        QVERIFY2(late.contains(" 01:30 <|image><|video|><image|> 01:30 <|image>"), qPrintable(late.right(200)));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, videoPrompt(tokenizer, "q", 1, 1, 1, ChatTemplate::Gemma3));
        // The markers given (the tokenizer's names of the config's ids) replace the Hub's.
        QCOMPARE(imagePrompt(tokenizer, "q", {1}, ChatTemplate::Gemma4, {"<img>", "<b>", "<e>", {}}),
                 QString("<bos><|turn>user\n<b><img><e>q<turn|>\n<|turn>model\n"));
        const std::vector<int64_t> ids = tokenizer.encode(imagePrompt(tokenizer, "what", {2}, ChatTemplate::Gemma4));
        const std::vector<int64_t> expected{2,   105, *tokenizer.tokenId("user"),  107, 248, 250, 250, 252, *tokenizer.tokenId("what"), 106,
                                            107, 105, *tokenizer.tokenId("model"), 107};
        QCOMPARE(ids, expected);
    }

    // The tiny tokenizers spell the fixtures' remapped ids, so a prompt's tokens and the config agree.
    void tokenizersSpellTheConfigIds()
    {
        const ModelConfig g4 = loadModelConfig(ropescope::test::fixture("gemma4-tiny") + "/config.json");
        const Tokenizer t4 = tinyTokenizer("gemma4");
        QCOMPARE(t4.tokenText(g4.imageToken).value_or(""), std::string("<|image|>"));
        QCOMPARE(t4.tokenText(g4.visionStart).value_or(""), std::string("<|image>"));
        QCOMPARE(t4.tokenText(g4.visionEnd).value_or(""), std::string("<image|>"));
        QCOMPARE(t4.tokenText(g4.videoToken).value_or(""), std::string("<|video|>"));
        QCOMPARE(t4.tokenText(g4.audioToken).value_or(""), std::string("<|audio|>"));
        QCOMPARE(t4.tokenText(g4.eos).value_or(""), std::string("<eos>"));
        QVERIFY(!t4.tokenText(300).has_value());                       // past the vocabulary
        QCOMPARE(t4.tokenText(240).value_or(""), std::string("w240")); // a word at every id a random model may answer with
        const ModelConfig g3 = loadModelConfig(ropescope::test::fixture("gemma3-tiny") + "/config.json");
        const Tokenizer t3 = tinyTokenizer("gemma3");
        QCOMPARE(t3.tokenText(g3.imageToken).value_or(""), std::string("<image_soft_token>"));
        QCOMPARE(t3.tokenText(g3.visionStart).value_or(""), std::string("<start_of_image>"));
        QCOMPARE(t3.tokenText(g3.visionEnd).value_or(""), std::string("<end_of_image>"));
        // The answer stops at the end of Gemma's turn.
        QCOMPARE(answerText(t4, {*t4.tokenId("red"), 106, *t4.tokenId("blue")}, g4.eos), QString("red"));
        QCOMPARE(answerText(t3, {*t3.tokenId("red"), 106, *t3.tokenId("blue")}, g3.eos), QString("red"));
    }

    // Gemma 4 `_long`: the sliding window (8) cuts the 12-token image block. The codes against the masks transformers
    // built (expected_long.safetensors) and against the README's rule written out here, cell by cell.
    void masksOfTheLongPrompt_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("gemma4") << "gemma4-tiny";
        QTest::newRow("gemma3") << "gemma3-tiny";
    }
    void masksOfTheLongPrompt()
    {
        QFETCH(QString, fixture);
        const ModelConfig cfg = loadModelConfig(ropescope::test::fixture(fixture) + "/config.json");
        const std::vector<int64_t> ids = inputIds(fixture, "_long");
        const SafeTensors expected = SafeTensors::open(ropescope::test::fixture(fixture) + "/expected_long.safetensors");
        const auto length = static_cast<int64_t>(ids.size());
        const bool gemma4 = cfg.architecture == Architecture::Gemma4;
        for (const int layer : {0, 2}) { // sliding, full
            const bool sliding = layer == 0;
            QCOMPARE(cfg.text.isSliding(layer), sliding);
            const torch::Tensor codes = keyMasks(cfg, layer, ids);
            QCOMPARE(codes.sizes(), (c10::IntArrayRef{length, length}));
            const torch::Tensor hf = toTorch(expected, sliding ? "attention_mask_sliding" : "attention_mask_full").to(torch::kBool);
            QVERIFY2(torch::equal(codes.le(1), hf),
                     qPrintable(fixture + QString(" layer %1: seen cells differ from transformers'").arg(layer)));
            const bool open = sliding || !gemma4; // Gemma 4 opens blocks on sliding layers only
            QCOMPARE(layerBlocksOpen(cfg.text, layer), open);
            for (int64_t q = 0; q < length; ++q)
                for (int64_t k = 0; k < length; ++k)
                    QCOMPARE(codes[q][k].item<int>(), expectedCode(ids, q, k, sliding ? 8 : 0, open, cfg.imageToken));
        }
        QCOMPARE(QString::fromStdString(layerKindWords(cfg.text, 0)), QString("sliding (window 8)"));
        QCOMPARE(QString::fromStdString(layerKindWords(cfg.text, 2)), QString("full"));
        QCOMPARE(QString::fromStdString(layerKindsNote(cfg.text)),
                 gemma4 ? QString("layers 0-1, 3-4 sliding (window 8), an image's tokens see each other both ways; layers 2, 5 full")
                        : QString("layers 0-1, 3-4 sliding (window 8), an image's tokens see each other both ways; layers 2, 5 full, "
                                  "an image's tokens see each other both ways"));
    }

    // What the attention views capture: the question (the tokens after the image's end marker) x the image tokens. On
    // a sliding layer the question's k-th token (at q) sees image tokens k' > q - 8 only: counted here by hand.
    void capturedCellsOfTheLongPrompt()
    {
        const ModelConfig cfg = loadModelConfig(ropescope::test::fixture("gemma4-tiny") + "/config.json");
        const std::vector<int64_t> ids = inputIds("gemma4-tiny", "_long");
        std::vector<int64_t> image, question;
        for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i)
            if (ids[static_cast<size_t>(i)] == cfg.imageToken)
                image.push_back(i);
        QCOMPARE(image.size(), size_t(12));
        QCOMPARE(image.front(), int64_t(11)); // bos, 9 words, boi
        for (int64_t i = image.back() + 2; i < static_cast<int64_t>(ids.size()); ++i)
            question.push_back(i); // after eoi: 24 tokens
        QCOMPARE(question.size(), size_t(24));
        const torch::Tensor sliding = keyMasks(cfg, 0, ids, question, image), full = keyMasks(cfg, 2, ids, question, image);
        QCOMPARE(sliding.sizes(), (c10::IntArrayRef{24, 12}));
        // Query 24 (the first after eoi at 23) reaches back to 17: image tokens 17..22 (6) seen, 11..16 (6) cut.
        int64_t cut = 0;
        for (int64_t q : question)
            for (int64_t k : image)
                cut += k <= q - 8;
        QCOMPARE(cut, int64_t(24 * 12 - (6 + 5 + 4 + 3 + 2 + 1)));
        const std::vector<int64_t> counts = maskCounts(sliding);
        QCOMPARE(counts, (std::vector<int64_t>{21, 0, cut, 0}));
        QCOMPARE(maskCounts(full), (std::vector<int64_t>{24 * 12, 0, 0, 0}));
        // Per image token (the map's cells): 11..16 hidden from every question token, 17..22 from some.
        const std::vector<uint8_t> marks = hiddenKeys(sliding);
        QCOMPARE(marks, (std::vector<uint8_t>{2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1}));
        QCOMPARE(hiddenKeys(full), std::vector<uint8_t>(12, 0));
        // Within the block, on the sliding layer: the first image token sees the 11 later ones through the block; the
        // last one sees back only 7 (the window), the first four of its block cut.
        const torch::Tensor inBlock = keyMasks(cfg, 0, ids, image, image);
        QCOMPARE(maskCounts(inBlock[0]), (std::vector<int64_t>{1, 11, 0, 0}));
        QCOMPARE(maskCounts(inBlock[11]), (std::vector<int64_t>{8, 0, 4, 0}));
        // On the full layer, causal only (Gemma 4 opens blocks on sliding layers): the later block tokens are hidden.
        QCOMPARE(maskCounts(keyMasks(cfg, 2, ids, image, image)[0]), (std::vector<int64_t>{1, 0, 0, 11}));
    }

    // The tiny Gemma 4 through prepareAttention: its processor's soft tokens (90 x 60 px at 70 soft tokens: 120 x 72 px,
    // 30 x 18 patches, 10 x 6 pooled), the prompt's ids token by token, the question after the image's end marker.
    void gemma4RequestHasTheProcessorsPrompt()
    {
        const Vlm vlm(ropescope::test::fixture("gemma4-tiny"));
        const Tokenizer tokenizer = tinyTokenizer("gemma4");
        const PreprocessOptions options = loadPreprocessOptions(ropescope::test::fixture("gemma4-tiny"), vlm.config());
        const AttentionRequest a = prepareAttention(vlm, tokenizer, {gradient(90, 60)}, "what colour is the circle", options);
        QCOMPARE(a.images.size(), size_t(1));
        QCOMPARE(a.image().rows, 6);
        QCOMPARE(a.image().cols, 10);
        std::vector<int64_t> expected{2, 105, *tokenizer.tokenId("user"), 107, 248};
        expected.insert(expected.end(), 60, 250);
        expected.push_back(252);
        for (const char* word : {"what", "colour", "is", "the", "circle"})
            expected.push_back(*tokenizer.tokenId(word));
        expected.insert(expected.end(), {106, 107, 105, *tokenizer.tokenId("model"), 107});
        QCOMPARE(a.ids, expected);
        QCOMPARE(a.imageTokens.front(), int64_t(5));
        QCOMPARE(a.imageTokens.size(), size_t(60));
        QCOMPARE(a.queryTokens.front(), int64_t(66)); // after <image|> at 65
        QCOMPARE(a.queryTokens.size(), size_t(10));
        QVERIFY(a.chat);
        QCOMPARE(a.forward.imageGridThw[0][1].item<int64_t>(), int64_t(18));
        QCOMPARE(a.forward.imageGridThw[0][2].item<int64_t>(), int64_t(30));
    }

    // Gemma 3: 256 -> the fixture's 9 soft tokens; "\n\n" around the image as Gemma3Processor writes it.
    void gemma3RequestHasTheProcessorsPrompt()
    {
        const Vlm vlm(ropescope::test::fixture("gemma3-tiny"));
        const Tokenizer tokenizer = tinyTokenizer("gemma3");
        const PreprocessOptions options = loadPreprocessOptions(ropescope::test::fixture("gemma3-tiny"), vlm.config());
        const AttentionRequest a = prepareAttention(vlm, tokenizer, {gradient(90, 60), gradient(30, 40)}, "what is this", options);
        QCOMPARE(a.images.size(), size_t(2));
        QCOMPARE(a.image().rows, 3);
        QCOMPARE(a.image().cols, 3);
        std::vector<int64_t> expected{2, 105, *tokenizer.tokenId("user"), 109, 248};
        expected.insert(expected.end(), 9, 250);
        expected.insert(expected.end(), {249, 110, 248}); // "\n\n" after the first image and "\n\n" before the second: one token
        expected.insert(expected.end(), 9, 250);
        expected.insert(expected.end(),
                        {249, 108, *tokenizer.tokenId("what"), *tokenizer.tokenId("is"), *tokenizer.tokenId("this"), 106, 107, 105,
                         *tokenizer.tokenId("model"), 107});
        QCOMPARE(a.ids, expected);
        QCOMPARE(a.imageTokens.size(), size_t(18));
        QCOMPARE(a.images[1].first, 9);
    }

    // Gemma 4's video: each frame its own block after its time; Gemma 3's video, a question's audio or image marker,
    // and a tokenizer that lacks the config's image id are refused in one line.
    void gemmaRefusals()
    {
        const Vlm g4(ropescope::test::fixture("gemma4-tiny")), g3(ropescope::test::fixture("gemma3-tiny"));
        const Tokenizer t4 = tinyTokenizer("gemma4"), t3 = tinyTokenizer("gemma3");
        const PreprocessOptions o4 = loadPreprocessOptions(ropescope::test::fixture("gemma4-tiny"), g4.config());
        const PreprocessOptions o3 = loadPreprocessOptions(ropescope::test::fixture("gemma3-tiny"), g3.config());
        const std::vector<QImage> frames{gradient(48, 36), gradient(48, 36), gradient(48, 36)};
        const AttentionRequest v = prepareVideoAttention(g4, t4, frames, "what is this", o4);
        QVERIFY(v.video);
        QCOMPARE(v.images.size(), size_t(3));
        const int perFrame = v.images.front().cells();
        QCOMPARE(v.imageTokens.size(), size_t(3 * perFrame));
        QCOMPARE(std::count(v.ids.begin(), v.ids.end(), int64_t(248)), std::ptrdiff_t(3)); // a boi and an eoi a frame
        QCOMPARE(std::count(v.ids.begin(), v.ids.end(), int64_t(252)), std::ptrdiff_t(3));
        QCOMPARE(std::count(v.ids.begin(), v.ids.end(), int64_t(254)), std::ptrdiff_t(3 * perFrame));
        const QString video = thrown<BadRequest>([&] { prepareVideoAttention(g3, t3, frames, "what is this", o3); });
        QVERIFY2(video.startsWith("video: Gemma 3 has no video path") && !video.contains('\n'), qPrintable(video));
        const QString audio = thrown<BadRequest>([&] { prepareAttention(g4, t4, {gradient(48, 36)}, "what is <|audio|> this", o4); });
        QVERIFY2(audio.contains("the audio token <|audio|>") && audio.contains("no audio tower") && !audio.contains('\n'),
                 qPrintable(audio));
        const QString boi = thrown<BadRequest>([&] { prepareAttention(g4, t4, {gradient(48, 36)}, "what <|image> is this", o4); });
        QVERIFY2(boi.contains("the special token <|image>"), qPrintable(boi));
        // A tokenizer without the config's eoi id (252): named with the key.
        QFile file(QString(ROPESCOPE_TEST_DATA) + "/attend/gemma4_tokenizer.json");
        QVERIFY(file.open(QIODevice::ReadOnly));
        QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
        QJsonArray added;
        for (const QJsonValue& token : json["added_tokens"].toArray())
            if (token.toObject()["id"].toInt() != 252)
                added.append(token);
        json["added_tokens"] = added;
        const Tokenizer lacking = Tokenizer::fromJson(QJsonDocument(json).toJson(), "tokenizer.json");
        const QString missing = thrown<BadInputFile>([&] { prepareAttention(g4, lacking, {gradient(48, 36)}, "what is this", o4); });
        QVERIFY2(missing.contains("no token has the config's eoi_token_id 252") && !missing.contains('\n'), qPrintable(missing));
    }

    // A family without layer kinds: every layer "full", no note, nothing hidden from the text after an image.
    void qwenLayersAreAllFull()
    {
        const ModelConfig cfg = loadModelConfig(ropescope::test::fixture("qwen2vl-tiny") + "/config.json");
        QCOMPARE(QString::fromStdString(layerKindWords(cfg.text, 0)), QString("full"));
        QVERIFY(layerKindsNote(cfg.text).empty());
        std::vector<int64_t> ids{1, 2, cfg.imageToken, cfg.imageToken, 3, 4, 5};
        const torch::Tensor codes = keyMasks(cfg, 0, ids, {4, 5, 6}, {2, 3});
        QCOMPARE(maskCounts(codes), (std::vector<int64_t>{6, 0, 0, 0}));
    }
};

QTEST_GUILESS_MAIN(TestGemmaPrompts)
#include "test_gemma_prompts.moc"

// `ropescope attend` end to end on the tiny Qwen2-VL fixture weights with a small WordLevel tokenizer:
// files written, shapes, probabilities, positions equal to `ropescope positions`, errors.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/tensor_io.h"
#include "tests/support/csv_table.h"
#include "tests/support/map_figure.h"
#include "tests/support/model_folder.h"
#include "tests/support/run_ropescope.h"
#include "views/charts/attention_heatmap.h"

#include <torch/types.h>

#include <cmath>
#include <map>

#include <sys/stat.h>
#include <unistd.h>
#endif

using namespace ropescope::model;

namespace {
QJsonObject readJson(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}
} // namespace

class TestAttendCli : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString model_, image_;

private Q_SLOTS:
    void initTestCase()
    {
        model_ = dir_.filePath("model");
        QVERIFY(makeTinyModel(model_));
        // 90x60 -> smart_resize 84x56 -> 4x6 patches -> a 2x3 merged grid.
        QImage image(90, 60, QImage::Format_RGB888);
        for (int y = 0; y < 60; ++y)
            for (int x = 0; x < 90; ++x)
                image.setPixelColor(x, y, QColor(x * 255 / 90, y * 255 / 60, 128));
        image_ = dir_.filePath("gradient.png");
        QVERIFY(image.save(image_));
    }

    void defaultsAnswerTheBundledSample()
    {
        // No --model, --image or --question: the bundled mrope model on the bundled sample, which it answers.
        const QString out = dir_.filePath("default");
        const auto r = runRopescope({"attend", "--output", out}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile sample(ROPESCOPE_TEST_DATA + "/../../resources/samples/shapes.txt");
        QVERIFY(sample.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(sample.readAll());
        const QString expected = text.section("# answer: ", 1).section(' ', 0, 0).trimmed();
        QFile answer(out + "/answer.txt");
        QVERIFY(answer.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(answer.readAll()).trimmed(), expected);
    }

    void writesEverything()
    {
        const QString out = dir_.filePath("out");
        const auto r = runRopescope({"attend", "--model", model_, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     out, "--max-new-tokens", "4"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(QFile::exists(out + "/answer.txt"));
        const QImage heat(out + "/heatmap.png");
        QVERIFY2(ropescope::test::isMapFigure(heat, QSize(84, 56)), "heatmap.png: the 84x56 map with its colour bar and caption");
        QVERIFY(heat.text("ropescope").contains("\"layout\""));

        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["layout"].toString(), QString("text:1,image:2x3,text:6")); // <vs> | 6 pads | <ve> + 5 words
        QCOMPARE(summary["untrained_scheme"].toBool(), false);
        const QJsonArray layers = summary["per_layer"].toArray();
        QCOMPARE(layers.size(), 2);
        for (const QJsonValue& l : layers) {
            const double mass = l.toObject()["image_mass"].toDouble();
            QVERIFY(mass > 0 && mass <= 1);
            QVERIFY(l.toObject()["normalized_entropy"].toDouble() <= 1.0 + 1e-9);
        }

        const SafeTensors t = SafeTensors::open(out + "/attention.safetensors");
        const auto attention = toTorch(t, "attention");
        QCOMPARE(attention.sizes(), (c10::IntArrayRef{2, 4, 5, 6})); // layers, heads, 5 question words, 6 image tokens
        QVERIFY((attention.sum(-1) <= 1 + 1e-5).all().item<bool>());
        QVERIFY(torch::equal(toTorch(t, "image_tokens"), torch::arange(1, 7)));
        QVERIFY(torch::equal(toTorch(t, "query_tokens"), torch::arange(8, 13))); // the words, not the <ve> marker at 7
        // Captured mass matches the summary.
        QVERIFY(std::abs(attention[0].sum(-1).mean().item<double>() - layers[0].toObject()["image_mass"].toDouble()) < 1e-5);

        const auto printed = runRopescope({"positions", "--scheme", "mrope", "--layout", "text:1,image:2x3,text:6"});
        QFile csv(out + "/positions.csv");
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readAll(), printed.out);
    }

    // A Qwen3-VL folder (the tiny fixture's weights): its processor defaults (32-pixel grid cells, 256x256
    // minimum), interleaved M-RoPE, DeepStack named in the summary, and the difference map under a scheme swap.
    void runsQwen3Vl()
    {
        const QString q3 = dir_.filePath("qwen3");
        QVERIFY(ropescope::test::makeModelFolder("qwen3vl-tiny", q3));
        const QString out = dir_.filePath("qwen3-out");
        const auto r = runRopescope({"attend", "--model", q3, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     out, "--scheme", "circle", "--difference", "--max-new-tokens", "2"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        // 90x60 -> 96x64 on the 32-pixel grid, under 256x256 -> scaled up to 320x224 -> 10x7 merged tokens.
        QVERIFY(ropescope::test::isMapFigure(QImage(out + "/heatmap.png"), QSize(320, 224)));
        QVERIFY(QFile::exists(out + "/difference.png"));
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["architecture"].toString(), QString("qwen3_vl"));
        QCOMPARE(summary["layout"].toString(), QString("text:1,image:7x10,text:6"));
        QCOMPARE(summary["allocation"].toString(), QString("interleaved-mrope[6,5,5]"));
        QCOMPARE(summary["untrained_scheme"].toBool(), true);
        const QJsonObject deepstack = summary["deepstack"].toObject();
        QCOMPARE(deepstack["vision_blocks"].toArray(), (QJsonArray{0, 1}));
        QCOMPARE(deepstack["after_decoder_layers"].toArray(), (QJsonArray{0, 1}));
        const QJsonArray layers = summary["per_layer"].toArray();
        QCOMPARE(layers.size(), 3);
        for (int l = 0; l < 3; ++l) {
            QCOMPARE(layers[l].toObject()["deepstack_after"].toBool(), l < 2);
            QVERIFY(layers[l].toObject()["shift"].toDouble() > 0); // circle moves the map away from mrope's
        }

        // Two images (DeepStack features go to both images' tokens): both blocks in the layout, shares per image.
        const QString two = dir_.filePath("qwen3-two");
        const auto r2 = runRopescope({"attend", "--model", q3, "--image", image_, "--image", image_, "--question",
                                      "What colour is the circle?", "--output", two, "--max-new-tokens", "2"},
                                     false);
        QVERIFY2(r2.exitCode == 0, r2.err.constData());
        QFile s2(two + "/summary.json");
        QVERIFY(s2.open(QIODevice::ReadOnly));
        const QJsonObject both = QJsonDocument::fromJson(s2.readAll()).object();
        QCOMPARE(both["layout"].toString(), QString("text:1,image:7x10,text:2,image:7x10,text:6"));
        QVERIFY(ropescope::test::isMapFigure(QImage(two + "/heatmap.png"), QSize(320 + 8 + 320, 224)));
        for (const QJsonValue& layer : both["per_layer"].toArray()) {
            const QJsonArray shares = layer.toObject()["image_shares"].toArray();
            QCOMPARE(shares.size(), 2);
            QVERIFY(std::abs(shares[0].toDouble() + shares[1].toDouble() - 1) < 1e-9);
            QVERIFY(shares[0].toDouble() != shares[1].toDouble()); // the same picture at other positions
        }
    }

    // Qwen3.5: only the attention layers have maps, under the model's own numbers; every view runs on them;
    // the summary says what the DeltaNet layers are; capturing one is an error naming the attention layers.
    void runsQwen35()
    {
        const QString q35 = dir_.filePath("qwen35");
        QVERIFY(ropescope::test::makeModelFolder("qwen35-tiny", q35));
        const QString out = dir_.filePath("qwen35-out");
        const auto r =
            runRopescope({"attend", "--model", q35, "--image", image_, "--question", "What colour is the circle?", "--output", out,
                          "--schemes", "mrope,circle", "--own-prior", "--relevancy", "--region", "1,1,2,2", "--max-new-tokens", "2"},
                         false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["architecture"].toString(), QString("qwen3_5"));
        QCOMPARE(summary["allocation"].toString(), QString("interleaved-mrope[2,1,1]"));
        QCOMPARE(summary["deltanet_layers"].toArray(), (QJsonArray{0, 1, 2, 4, 5, 6}));
        QVERIFY(summary["hybrid_note"].toString().contains("rotate 8 of 32 dims"));
        QCOMPARE(summary["heatmap_layer"].toInt(), 7);
        const QJsonArray layers = summary["per_layer"].toArray();
        QCOMPARE(layers.size(), 2);
        QCOMPARE(layers[0].toObject()["layer"].toInt(), 3);
        QCOMPARE(layers[1].toObject()["layer"].toInt(), 7);
        for (const char* file :
             {"heatmap.png", "schemes.csv", "schemes.png", "own_prior.csv", "own_prior.png", "relevancy.png", "region.csv", "region.png"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
        // A second run into the folder with fewer flags: the first run's files of the outputs it does not write go.
        const auto again = runRopescope({"attend", "--model", q35, "--image", image_, "--question", "What colour is the circle?",
                                         "--output", out, "--region", "1,1,2,2", "--max-new-tokens", "2"},
                                        false);
        QVERIFY2(again.exitCode == 0, again.err.constData());
        for (const char* file : {"schemes.csv", "schemes.png", "own_prior.csv", "own_prior.png", "relevancy.png"})
            QVERIFY2(!QFile::exists(out + "/" + file), file);
        for (const char* file : {"heatmap.png", "region.csv", "region.png", "summary.json", "answer.txt"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
        const auto bad = runRopescope({"attend", "--model", q35, "--image", image_, "--question", "What colour is the circle?", "--output",
                                       dir_.filePath("qwen35-bad"), "--capture-layers", "2,3"},
                                      false);
        QVERIFY(bad.exitCode != 0);
        QVERIFY2(bad.err.contains("layer 2 is a Gated DeltaNet layer") && bad.err.contains("attention layers are 3, 7"),
                 bad.err.constData());
        QVERIFY(!QFile::exists(dir_.filePath("qwen35-bad")));
    }

    // A GLM-4.1V folder (the tiny fixture's weights, a word tokenizer with GLM's special tokens): GLM's chat
    // template, its own scheme by default, half of each head rotated on adjacent pairs, every view on it.
    void runsGlmV()
    {
        const QString glm = dir_.filePath("glm");
        QVERIFY(ropescope::test::makeModelFolder("glm4v-tiny", glm));
        const QString out = dir_.filePath("glm-out");
        const auto r = runRopescope({"attend", "--model", glm, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     out, "--schemes", "glm-v,circle", "--own-prior", "--relevancy", "--max-new-tokens", "2"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["architecture"].toString(), QString("glm4v"));
        QCOMPARE(summary["scheme"].toString(), QString("glm-v"));
        QCOMPARE(summary["allocation"].toString(), QString("sectioned[2,3,3]"));
        const QJsonObject rotary = summary["rotary"].toObject();
        QCOMPARE(rotary["pairing"].toString(), QString("adjacent"));
        QCOMPARE(rotary["rotary_dim"].toInt(), 16);
        QCOMPARE(rotary["theta"].toDouble(), 1000.0);
        // "[gMASK]<sop><|user|>" then <|begin_of_image|>: the image's tokens start at 4, after 4 text tokens.
        QVERIFY2(summary["layout"].toString().startsWith("text:4,image:"), qPrintable(summary["layout"].toString()));
        QCOMPARE(summary["per_layer"].toArray().size(), 2);
        for (const char* file : {"heatmap.png", "schemes.csv", "own_prior.csv", "relevancy.png"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
    }

    // Gemma 4 and Gemma 3 folders (the tiny fixtures' weights, word tokenizers at their remapped ids): the prompt their
    // processors build, their own scheme (hard: every token at its index) and others swapped in, and the masks (issue 73
    // §3). The question (after the image's end marker) sees only the window's 8 positions on a sliding layer, so most of
    // the image is hidden from it there: the cells counted here by hand, the masks tensor, and the attention itself, which
    // is exactly 0 on every hidden cell and above 0 on every seen one.
    void runsGemma_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("layout");
        QTest::addColumn<int>("fullRotaryDim");
        QTest::newRow("gemma4") << "gemma4-tiny"
                                << "text:5,image:6x10,text:11" << 8; // bos <|turn> user \n <|image> | 60 | <image|>, 5 words, 5
        QTest::newRow("gemma3") << "gemma3-tiny"
                                << "text:5,image:3x3,text:12" << 16; // bos <start_of_turn> user \n\n\n boi | 9 | eoi \n\n, ...
    }
    void runsGemma()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, layout);
        QFETCH(int, fullRotaryDim);
        const QString model = dir_.filePath(fixture);
        QVERIFY(ropescope::test::makeModelFolder(fixture, model));
        const QString out = dir_.filePath(fixture + "-out");
        const auto r = runRopescope({"attend", "--model", model, "--image", image_, "--question", "What colour is the circle", "--output",
                                     out, "--layers-heads", "--per-token", "--masks", "--max-new-tokens", "3"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject summary = readJson(out + "/summary.json");
        QCOMPARE(summary["scheme"].toString(), QString("hard"));
        // --masks: each kind's keys per query over the whole prompt, written out here by the rule: a sliding layer sees
        // back 8 positions and (blocks open) on to its block's end; Gemma 4's full layers are causal, Gemma 3's open blocks.
        QVERIFY(QFile::exists(out + "/masks.png"));
        const QJsonObject masksFile = readJson(out + "/masks.json");
        const QJsonArray kinds = masksFile["kinds"].toArray();
        QCOMPARE(kinds.size(), 2);
        QCOMPARE(kinds[0].toObject()["layers"].toArray(), (QJsonArray{0, 1, 3, 4}));
        const QJsonArray imageList = masksFile["image_tokens"].toArray();
        const int first = imageList.first().toInt(), last = imageList.last().toInt();
        for (const QJsonValue& k : kinds) {
            const bool sliding = k.toObject()["kind"].toString() == "sliding";
            const bool open = sliding || fixture == "gemma3-tiny";
            const QJsonArray visible = k.toObject()["visible"].toArray();
            QCOMPARE(visible.size(), masksFile["length"].toInt());
            for (int q = 0; q < visible.size(); ++q) {
                const int from = sliding ? std::max(0, q - 7) : 0, to = open && q >= first && q <= last ? last : q;
                QCOMPARE(visible[q].toArray(), (QJsonArray{QJsonArray{from, to}}));
            }
        }
        QCOMPARE(summary["layout"].toString(), layout);
        QCOMPARE(summary["untrained_scheme"].toBool(), false);
        QVERIFY2(summary["layer_kinds"].toString().startsWith("layers 0-1, 3-4 sliding (window 8)"),
                 qPrintable(summary["layer_kinds"].toString()));
        const QJsonObject full = summary["rotary_by_kind"].toObject()["full"].toObject();
        QCOMPARE(full["rotary_dim"].toInt(), fullRotaryDim);
        QCOMPARE(full["proportional"].toBool(), fixture == "gemma4-tiny");
        QCOMPARE(full["linear_factor"].toDouble(), fixture == "gemma4-tiny" ? 1.0 : 8.0);
        QCOMPARE(summary["rotary_by_kind"].toObject()["sliding"].toObject()["window"].toInt(), 8);

        const SafeTensors t = SafeTensors::open(out + "/attention.safetensors");
        const torch::Tensor attention = toTorch(t, "attention"), masks = toTorch(t, "masks");
        const torch::Tensor rows = toTorch(t, "query_tokens"), cols = toTorch(t, "image_tokens");
        QCOMPARE(masks.sizes(), (c10::IntArrayRef{6, rows.size(0), cols.size(0)}));
        const QJsonArray perLayer = summary["per_layer"].toArray();
        QCOMPARE(perLayer.size(), 6);
        for (int l = 0; l < 6; ++l) {
            const bool sliding = l != 2 && l != 5;
            const QJsonObject entry = perLayer[l].toObject();
            QCOMPARE(entry["layer_kind"].toString(), QString(sliding ? "sliding" : "full"));
            int64_t hidden = 0;
            for (int64_t i = 0; i < rows.size(0); ++i)
                for (int64_t j = 0; j < cols.size(0); ++j) {
                    const bool cut = sliding && cols[j].item<int64_t>() <= rows[i].item<int64_t>() - 8; // out of the window's reach
                    hidden += cut;
                    QCOMPARE(masks[l][i][j].item<int>(), cut ? 2 : 0);
                    const double p = attention[l].select(1, i).select(1, j).sum().item<double>(); // over heads
                    QVERIFY2(cut ? p == 0.0 : p > 0.0,
                             qPrintable(QString("layer %1, query %2, image token %3: %4").arg(l).arg(i).arg(j).arg(p)));
                }
            QCOMPARE(entry["hidden_cells"].toInt(), static_cast<int>(hidden));
            QVERIFY(!sliding || hidden > 0);
        }
        // The answer's rows (each from the step that produced its token, later in the sequence): their codes mark exactly
        // the attention's zeros too.
        const torch::Tensor answerMasks = toTorch(t, "answer_masks"), answers = toTorch(t, "answer_attention");
        QCOMPARE(answerMasks.sizes(), (c10::IntArrayRef{6, answers.size(2), cols.size(0)}));
        const torch::Tensor answerZero = answers.sum(1).eq(0); // [layers, answer tokens, image tokens]
        QVERIFY(torch::equal(answerMasks.eq(2), answerZero));
        QVERIFY(answerMasks.le(2).all().item<bool>() && answerMasks.ne(1).all().item<bool>());

        // The table and the per-token list say the same; the heatmap's caption names the mask.
        const CsvTable table = CsvTable::fromFile(out + "/layers_heads.csv");
        QCOMPARE(table.rows.size(), 6 * 4);
        QCOMPARE(table.rows.front()[table.header.indexOf("layer_kind")], QString("sliding"));
        QCOMPARE(table.rows.front()[table.header.indexOf("window")], QString("8"));
        QCOMPARE(table.rows.back()[table.header.indexOf("layer_kind")], QString("full"));
        const QJsonArray tokens = readJson(out + "/tokens.json")["tokens"].toArray();
        QCOMPARE(tokens.first().toObject()["per_layer"].toArray()[0].toObject()["hidden_image_tokens"].toInt(),
                 masks[0][0].ge(2).sum().item<int>());
        const QImage heat(out + "/heatmap.png");
        QVERIFY(heat.text("ropescope").contains("\"layer_kinds\""));

        // Other schemes run on it as on Qwen: M-RoPE alone, then three side by side.
        const auto mrope = runRopescope({"attend", "--model", model, "--image", image_, "--question", "What colour is the circle",
                                         "--output", out + "-mrope", "--scheme", "mrope", "--max-new-tokens", "2"},
                                        false);
        QVERIFY2(mrope.exitCode == 0, mrope.err.constData());
        const QJsonObject m = readJson(out + "-mrope/summary.json");
        QCOMPARE(m["untrained_scheme"].toBool(), true);
        // What the scheme covers on a full layer: Gemma 4's 4 rotated pairs of 16; Gemma 3's whole head, 8 times slower.
        const QString note = m["rotary_by_kind"].toObject()["full"].toObject()["note"].toString();
        QVERIFY2(note.contains(fixture == "gemma4-tiny" ? "spreads its axes over those 4 pairs only" : "every frequency / 8"),
                 qPrintable(note));
        const auto several = runRopescope({"attend", "--model", model, "--image", image_, "--question", "What colour is the circle",
                                           "--output", out + "-schemes", "--schemes", "mrope,circle,vrope", "--max-new-tokens", "2"},
                                          false);
        QVERIFY2(several.exitCode == 0, several.err.constData());
        QCOMPARE(CsvTable::fromFile(out + "-schemes/schemes.csv").rows.size(), 3);
    }

    // The MoE members (the tiny fixtures' weights, a word tokenizer with their special tokens): every output,
    // and where the image and text tokens are routed, per sparse layer and expert.
    void runsMoeMembers_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("modelType");
        QTest::addColumn<int>("sparseLayers");
        QTest::addColumn<int>("topK");
        QTest::newRow("qwen3_5_moe") << "qwen35moe-tiny"
                                     << "qwen3_5_moe" << 8 << 2;
        QTest::newRow("qwen3_vl_moe") << "qwen3vlmoe-tiny"
                                      << "qwen3_vl_moe" << 2 << 2;
        QTest::newRow("glm4v_moe") << "glm4vmoe-tiny"
                                   << "glm4v_moe" << 2 << 2;
    }
    void runsMoeMembers()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, modelType);
        QFETCH(int, sparseLayers);
        QFETCH(int, topK);
        const QString model = dir_.filePath(fixture);
        QVERIFY(ropescope::test::makeModelFolder(fixture, model));
        const QString out = dir_.filePath(fixture + "-out");
        const auto r = runRopescope({"attend", "--model", model, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     out, "--expert-usage", "--layers-heads", "--own-prior", "--relevancy", "--per-token", "--region",
                                     "1,1,2,2", "--max-new-tokens", "2"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["model_type"].toString(), modelType);
        QVERIFY2(summary["moe"].toString().startsWith("MoE: 8 experts, top-2"), qPrintable(summary["moe"].toString()));
        QCOMPARE(summary["expert_overlap"].toArray().size(), sparseLayers);
        for (const char* file : {"heatmap.png", "expert_usage.png", "expert_usage.csv", "expert_usage.json", "layers_heads.csv",
                                 "own_prior.csv", "relevancy.png", "tokens.json", "region.csv", "attention.safetensors", "answer.txt"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
        // One row per sparse layer and expert; each layer's shares of one kind of token sum to top-k.
        const CsvTable csv = CsvTable::fromFile(out + "/expert_usage.csv");
        QCOMPARE(csv.header, (QStringList{"layer", "expert", "image_share", "text_share", "image_mean_weight", "text_mean_weight"}));
        QCOMPARE(csv.rows.size(), sparseLayers * 8);
        std::map<int, std::pair<double, double>> sums;
        for (const QStringList& row : csv.rows) {
            sums[row[0].toInt()].first += row[2].toDouble();
            sums[row[0].toInt()].second += row[3].toDouble();
        }
        QCOMPARE(static_cast<int>(sums.size()), sparseLayers);
        for (const auto& [layer, sum] : sums) {
            QVERIFY2(std::abs(sum.first - topK) < 1e-6 && std::abs(sum.second - topK) < 1e-6, qPrintable(QString::number(layer)));
        }
        QFile json(out + "/expert_usage.json");
        QVERIFY(json.open(QIODevice::ReadOnly));
        const QJsonObject usage = QJsonDocument::fromJson(json.readAll()).object();
        QCOMPARE(usage["top_k"].toInt(), topK);
        QCOMPARE(usage["image_tokens"].toInt(), summary["image_tokens"].toInt());
    }

    // --expert-usage on a dense model: refused in one line naming the flag.
    void expertUsageNeedsAMixtureOfExperts()
    {
        const auto r = runRopescope({"attend", "--model", model_, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     dir_.filePath("dense-experts"), "--expert-usage"},
                                    false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.startsWith("ropescope attend: --expert-usage: qwen2_vl is a dense model") && r.err.count('\n') == 1,
                 r.err.constData());
        QVERIFY(!QFile::exists(dir_.filePath("dense-experts/heatmap.png")));
    }

    // A fixture folder as it lies in tests/data (no tokenizer.json): the folder is named with what it lacks and
    // where a checkpoint has it, in one line, before its weights are read (issue 56 item 5).
    void aFolderWithoutTokenizerIsNamed()
    {
        const QString bare = QString(ROPESCOPE_TEST_DATA) + "/fixtures/qwen35moe-tiny";
        QVERIFY(!QFile::exists(bare + "/tokenizer.json"));
        const auto r = runRopescope({"attend", "--model", bare, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     dir_.filePath("no-tokenizer")},
                                    false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("qwen35moe-tiny: this model folder has no tokenizer.json") && r.err.contains("Hugging Face Hub") &&
                     r.err.count('\n') == 1,
                 r.err.constData());
        QVERIFY(!QFile::exists(dir_.filePath("no-tokenizer")));
    }

    // A PaddleOCR-VL folder (the tiny fixture's weights, a word tokenizer with its special tokens): its chat
    // template, raster-order patches of one frame, Qwen2-VL's M-RoPE on the ERNIE decoder; a video is refused.
    void runsPaddleOcrVl()
    {
        const QString paddle = dir_.filePath("paddle");
        QVERIFY(ropescope::test::makeModelFolder("paddleocr-vl-tiny", paddle));
        const QString out = dir_.filePath("paddle-out");
        const auto r = runRopescope({"attend", "--model", paddle, "--image", image_, "--question", "What colour is the circle?", "--output",
                                     out, "--schemes", "mrope,circle", "--own-prior", "--relevancy", "--max-new-tokens", "2"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["architecture"].toString(), QString("paddleocr_vl"));
        QCOMPARE(summary["allocation"].toString(), QString("sectioned[4,6,6]"));
        QCOMPARE(summary["rotary"].toObject()["pairing"].toString(), QString("half"));
        // "<|begin_of_sentence|>User:" then <|IMAGE_START|>: the image's tokens start at 3.
        QVERIFY2(summary["layout"].toString().startsWith("text:3,image:"), qPrintable(summary["layout"].toString()));
        QCOMPARE(summary["per_layer"].toArray().size(), 3);
        for (const char* file : {"heatmap.png", "schemes.csv", "own_prior.csv", "relevancy.png"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
    }

    void flagsUntrainedSchemes()
    {
        const QString out = dir_.filePath("circle");
        const auto r = runRopescope({"attend", "--model", model_, "--image", image_, "--question", "where is the square?", "--output", out,
                                     "--scheme", "circle", "--age", "strategy_4", "--capture-layers", "1", "--head", "0"},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(s.readAll()).object();
        QCOMPARE(summary["untrained_scheme"].toBool(), true);
        QCOMPARE(summary["age"].toString(), QString("CM"));
        QCOMPARE(summary["per_layer"].toArray().size(), 1);
        QCOMPARE(summary["per_layer"].toArray()[0].toObject()["scheme"].toString(), QString("mrope")); // layer 1 under strategy_4
    }

    void ownSchemeGivenOnTheCommandLineIsNotUntrained()
    {
        // The bundled Circle-RoPE + AGE model under exactly its own scheme, spelled out as flags.
        const QString out = dir_.filePath("own-circle-age");
        const auto r = runRopescope({"attend", "--model", ROPESCOPE_TEST_DATA + "/../../resources/models/circle_age", "--scheme", "circle",
                                     "--alpha", "0.5", "--radius", "16", "--age", "strategy_4", "--output", out},
                                    false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile s(out + "/summary.json");
        QVERIFY(s.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(s.readAll()).object()["untrained_scheme"].toBool(), false);
    }

    void batchAttentionItemsMatchAttend()
    {
        // A scheme sweep in a batch job: the same heatmap and summary as `attend` with the same flags.
        QFile job(dir_.filePath("attention-job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(
            QJsonDocument(QJsonObject{{"defaults",
                                       QJsonObject{{"layout", "text:4,image:8x8,text:6"},
                                                   {"model", model_},
                                                   {"image", image_},
                                                   {"question", "What colour is the circle?"}}},
                                      {"items",
                                       QJsonArray{QJsonObject{{"type", "attention"},
                                                              {"output", "heat_{scheme}.png"},
                                                              {"sweep", QJsonObject{{"scheme", QJsonArray{"mrope", "circle"}}}}},
                                                  QJsonObject{{"type", "attention"}, {"output", "summary.json"}, {"scheme", "circle"}},
                                                  QJsonObject{{"type", "attention"}, {"output", "heat.gif"}},
                                                  QJsonObject{{"type", "attention"}, {"output", "answer_circle.txt"}, {"scheme", "circle"}},
                                                  QJsonObject{{"type", "attention"}, {"output", "heat.svg"}}}}})
                .toJson());
        job.close();
        const QString out = dir_.filePath("batch-out");
        const auto r = runRopescope({"batch", job.fileName(), "--output", out}, false);
        QCOMPARE(r.exitCode, 1); // the .gif item fails, alone, naming what an item can write; so does the heatmap as .svg
        QVERIFY2(r.err.contains("item 3: attention items write .png (heatmap), .json (summary), .csv (positions), .safetensors "
                                "(attention), .txt (answer)"),
                 r.err.constData());
        QVERIFY2(r.err.contains("item 5: attention items write .png (heatmap)") && r.err.contains("no output for 'heat.svg'"),
                 r.err.constData());
        QVERIFY2(r.out.contains("4 written, 2 failed"), r.out.constData());

        for (const char* scheme : {"mrope", "circle"}) {
            const QString single = dir_.filePath(QString("single-") + scheme);
            const auto a = runRopescope({"attend", "--model", model_, "--image", image_, "--question", "What colour is the circle?",
                                         "--scheme", scheme, "--output", single},
                                        false);
            QVERIFY2(a.exitCode == 0, a.err.constData());
            const QImage fromBatch(out + "/heat_" + scheme + ".png");
            QVERIFY(!fromBatch.isNull());
            QCOMPARE(fromBatch, QImage(single + "/heatmap.png"));
            if (QByteArray(scheme) == "circle") {
                QFile batchSummary(out + "/summary.json"), attendSummary(single + "/summary.json");
                QVERIFY(batchSummary.open(QIODevice::ReadOnly) && attendSummary.open(QIODevice::ReadOnly));
                QCOMPARE(QJsonDocument::fromJson(batchSummary.readAll()), QJsonDocument::fromJson(attendSummary.readAll()));
                QFile batchAnswer(out + "/answer_circle.txt"), attendAnswer(single + "/answer.txt"); // a .txt item: the answer
                QVERIFY(batchAnswer.open(QIODevice::ReadOnly) && attendAnswer.open(QIODevice::ReadOnly));
                QCOMPARE(batchAnswer.readAll(), attendAnswer.readAll());
            }
        }
        QVERIFY(QImage(out + "/heat_mrope.png") != QImage(out + "/heat_circle.png")); // other positions, other attention
    }

    void differenceFromTheTrainedScheme()
    {
        // --difference: the same prompt under the model's own scheme (mrope) too; per-layer shift is the
        // total-variation distance between the two schemes' mean maps over the image.
        auto attend = [&](const QString& out, QStringList extra) {
            const auto r = runRopescope(
                QStringList{"attend", "--model", model_, "--image", image_, "--question", "What colour is the circle?", "--output", out} +
                    extra,
                false);
            QVERIFY2(r.exitCode == 0, r.err.constData());
        };
        auto summaryOf = [](const QString& out) {
            QFile f(out + "/summary.json");
            f.open(QIODevice::ReadOnly);
            return QJsonDocument::fromJson(f.readAll()).object();
        };
        attend(dir_.filePath("d-mrope"), {});
        attend(dir_.filePath("d-circle"), {"--scheme", "circle", "--difference"});
        const QJsonObject summary = summaryOf(dir_.filePath("d-circle"));
        QCOMPARE(summary["difference_from"].toString(), QString("mrope"));
        const auto own = toTorch(SafeTensors::open(dir_.filePath("d-mrope") + "/attention.safetensors"), "attention");
        const auto circle = toTorch(SafeTensors::open(dir_.filePath("d-circle") + "/attention.safetensors"), "attention");
        const QJsonArray layers = summary["per_layer"].toArray();
        for (int k = 0; k < layers.size(); ++k) {
            const auto a = attentionMap(own[k], -1), b = attentionMap(circle[k], -1);
            const double tv = 0.5 * (b / b.sum() - a / a.sum()).abs().sum().item<double>();
            QVERIFY2(std::abs(layers[k].toObject()["shift"].toDouble() - tv) < 1e-6, qPrintable(QString::number(tv)));
            QVERIFY(tv > 1e-4); // other positions move attention
        }
        QCOMPARE(QImage(dir_.filePath("d-circle") + "/difference.png").size(), QSize(84, 56));

        // Under its own scheme nothing moves: shift 0, and the difference map is the image under plain white.
        const QString same = dir_.filePath("d-same");
        attend(same, {"--difference"});
        for (const QJsonValue& l : summaryOf(same)["per_layer"].toArray())
            QCOMPARE(l.toObject()["shift"].toDouble(), 0.0);
        const QImage diff = QImage(same + "/difference.png").convertToFormat(QImage::Format_RGB888);
        const QImage background =
            QImage(image_).scaled(84, 56, Qt::IgnoreAspectRatio, Qt::SmoothTransformation).convertToFormat(QImage::Format_RGB888);
        QCOMPARE(diff.size(), background.size());
        for (int y = 0; y < diff.height(); y += 5)
            for (int x = 0; x < diff.width(); x += 5) {
                const QColor got = diff.pixelColor(x, y), src = background.pixelColor(x, y);
                for (auto [g, s] : {std::pair{got.red(), src.red()}, {got.green(), src.green()}, {got.blue(), src.blue()}})
                    QVERIFY2(std::abs(g - (0.45 * s + 0.55 * 255)) <= 1.0, qPrintable(QString("(%1,%2)").arg(x).arg(y)));
            }
        QVERIFY(!QFile::exists(dir_.filePath("d-mrope") + "/difference.png"));

        // A run without --difference into the same folder removes the earlier run's difference map.
        attend(same, {});
        QVERIFY(QFile::exists(same + "/heatmap.png"));
        QVERIFY(!QFile::exists(same + "/difference.png"));
    }

    void outputsAppearTogetherOrNotAtAll()
    {
        // summary.json is a FIFO: the run fails before any file replaces an earlier one, and none is left.
        const QString out = dir_.filePath("staged");
        QVERIFY(QDir().mkpath(out));
        QVERIFY(::mkfifo(QFile::encodeName(out + "/summary.json").constData(), 0600) == 0);
        const auto r = runRopescope({"attend", "--model", model_, "--image", image_, "--question", "what", "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("summary.json: exists and is not a regular file"), r.err.constData());
        QCOMPARE(QDir(out).entryList(QDir::Files | QDir::Hidden | QDir::System), QStringList{"summary.json"});
    }

    void differenceColours()
    {
        // Attention moved from the top-left cell to the bottom-right one: blue where it left, red where it
        // went, white where nothing changed (2x2 grid on a 2x2 image: cell centres are pixel centres).
        QImage white(2, 2, QImage::Format_RGB888);
        white.fill(Qt::white);
        ropescope::views::HeatmapOptions o;
        o.opacity = 1;
        o.smoothing = 0;
        o.gamma = 1;
        const QImage d = ropescope::views::attentionDifferenceOverlay(white, {1, 0, 0, 0}, {0, 0, 0, 1}, 2, 2, o);
        QCOMPARE(d.pixelColor(0, 0), QColor(0, 0, 255));
        QCOMPARE(d.pixelColor(1, 1), QColor(255, 0, 0));
        QCOMPARE(d.pixelColor(1, 0), QColor(255, 255, 255));
        // Scale-free: maps are compared as distributions over the image.
        QCOMPARE(ropescope::views::attentionDifferenceOverlay(white, {2, 2, 2, 2}, {1, 1, 1, 1}, 2, 2, o).pixelColor(0, 0),
                 QColor(255, 255, 255));
    }

    // Words a WordLevel model lacks are read as unknown: said on stderr and in summary.json, not silently.
    void warnsOnUnknownWords()
    {
        const QString out = dir_.filePath("unknown");
        const QString sample = ROPESCOPE_TEST_DATA + "/../../resources/samples/shapes.png";
        auto r = runRopescope({"attend", "--image", sample, "--question", "what colour is the big circle?", "--output", out}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("warning: the model does not know the words 'big', 'circle?'"), r.err.constData());
        QCOMPARE(readJson(out + "/summary.json")["unknown_words"].toArray(), (QJsonArray{"big", "circle?"}));
        r = runRopescope({"attend", "--image", sample, "--question", "what colour is the circle", "--output", out}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(!r.err.contains("warning"), r.err.constData());
        QVERIFY(!readJson(out + "/summary.json").contains("unknown_words"));
    }

    // `eval --questions` on the questions.jsonl that --save-samples writes gives what the synthetic stream
    // gives for the same samples: the same answers, types and grounding, through files a user could edit.
    void evalsOwnQuestionsLikeTheSyntheticStream()
    {
        const QString model = ROPESCOPE_TEST_DATA + "/../../resources/models/mrope", saved = dir_.filePath("saved");
        auto r =
            runRopescope({"eval", "--model", model, "--samples", "20", "--rendering", "drawn", "--save-samples", saved, "--json"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject stream = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(stream["rendering"].toString(), QString("drawn"));
        r = runRopescope({"eval", "--model", model, "--questions", saved + "/questions.jsonl", "--json"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject own = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(own["samples"].toInt(), 20);
        QCOMPARE(own["by_type"], stream["by_type"]);
        QCOMPARE(own["accuracy"].toDouble(), stream["accuracy"].toDouble());
        const QJsonArray a = own["grounding"].toArray(), b = stream["grounding"].toArray();
        QCOMPARE(a.size(), 4);
        QCOMPARE(a.size(), b.size());
        for (int l = 0; l < a.size(); ++l)
            QVERIFY2(std::abs(a[l].toDouble() - b[l].toDouble()) < 1e-9, qPrintable(QString::number(l)));

        // Errors name the file, the line and the field; nothing is half-evaluated.
        const auto write = [&](const QString& name, const QByteArray& text) {
            QFile f(dir_.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(text);
        };
        write("q_bad.jsonl",
              "{\"image\": \"saved/sample_00.png\", \"question\": \"what shape is red\", \"answer\": \"circle\"}\n"
              "{\"image\": \"saved/sample_01.png\", \"question\": \"what shape is red\"}\n");
        write("q_mask.jsonl", "{\"image\": \"saved/sample_00.png\", \"question\": \"q\", \"answer\": \"a\", \"mask\": [1, 0]}\n");
        write("q_missing.jsonl", "{\"image\": \"nowhere.png\", \"question\": \"q\", \"answer\": \"a\"}\n");
        write("q_text.jsonl", "what shape is red\n");
        write("q_empty.jsonl", "\n\n");
        for (const auto& [file, mentions] : {std::pair{"q_bad.jsonl", "q_bad.jsonl:2: \"answer\" must be a non-empty string"},
                                             {"q_mask.jsonl", "q_mask.jsonl:1: \"mask\" must be 64 numbers"},
                                             {"q_missing.jsonl", "line 1: "},
                                             {"q_text.jsonl", "q_text.jsonl:1: not a JSON object"},
                                             {"q_empty.jsonl", "q_empty.jsonl: no questions"}}) {
            r = runRopescope({"eval", "--model", model, "--questions", dir_.filePath(file)}, false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(mentions), r.err.constData());
        }
        QVERIFY(::mkfifo(qPrintable(dir_.filePath("q_fifo.jsonl")), 0600) == 0);
        r = runRopescope({"eval", "--model", model, "--questions", dir_.filePath("q_fifo.jsonl")}, false);
        QCOMPARE(r.exitCode, 2); // a FIFO is not a questions file: bad input
        QVERIFY2(r.err.contains("q_fifo.jsonl") && r.err.contains("regular file"), r.err.constData());
        r = runRopescope({"eval", "--model", model, "--questions", saved + "/questions.jsonl", "--seed", "4"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--seed: not with --questions"), r.err.constData());
        r = runRopescope({"eval", "--model", model, "--rendering", "photo"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--rendering: grid, drawn or varied, not 'photo'"), r.err.constData());
    }

    void errors()
    {
        QFile bad(dir_.filePath("broken.png"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("\x89PNG\r\n\x1a\nnot really");
        bad.close();
        auto r = runRopescope(
            {"attend", "--model", model_, "--image", dir_.filePath("broken.png"), "--question", "what", "--output", dir_.filePath("x")},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("broken.png"), r.err.constData());
        QVERIFY(!QDir(dir_.filePath("x")).exists());
        r = runRopescope({"attend", "--model", model_, "--image", image_, "--output", dir_.filePath("x")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("give --image and --question together"), r.err.constData());
        r = runRopescope(
            {"attend", "--model", model_, "--image", image_, "--question", "what", "--output", dir_.filePath("x"), "--capture-layers", "7"},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("--capture-layers"));
        // A preprocessor_config.json that cannot be right is an error naming the file and key, not ignored.
        const QString badModel = dir_.filePath("bad-preprocessor");
        QVERIFY(QDir().mkpath(badModel));
        for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"})
            QVERIFY(QFile::copy(model_ + "/" + name, badModel + "/" + name));
        for (const auto& [json, mentions] : {std::pair{"{\"max_pixels\": 0}", "'max_pixels' must be a whole number"},
                                             {"{\"min_pixels\": 5000, \"max_pixels\": 4000}", "min_pixels 5000 exceeds max_pixels 4000"},
                                             {"{\"image_std\": [0.2, 0, 0.2]}", "'image_std' must be 3 numbers above 0"},
                                             {"[1, 2]", "not a JSON object"}}) {
            QFile config(badModel + "/preprocessor_config.json");
            QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
            config.write(json);
            config.close();
            r = runRopescope({"attend", "--model", badModel, "--image", image_, "--question", "what", "--output", dir_.filePath("x")},
                             false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("preprocessor_config.json: ") && r.err.contains(mentions), r.err.constData());
        }
        // A question so long that one captured layer (4 heads x L x L, ~3 copies) needs more than half of this
        // machine's memory is refused before anything runs (20,000 words used to allocate 6.4 GB a tensor).
        const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
        const int words = static_cast<int>(1.2 * std::sqrt(memory / 2 / (4.0 * 13)));
        QElapsedTimer clock;
        clock.start();
        r = runRopescope({"attend", "--model", model_, "--image", image_, "--question", QString(" a").repeated(words).trimmed(), "--output",
                          dir_.filePath("x")},
                         false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("capturing its attention per layer needs about") && r.err.contains("shorten the question"),
                 r.err.constData());
        QVERIFY2(clock.elapsed() < 60000, qPrintable(QString::number(clock.elapsed())));
        // The checkpoint decides the rotary settings: a flag that would be ignored is refused.
        r = runRopescope(
            {"attend", "--model", model_, "--image", image_, "--question", "what", "--output", dir_.filePath("x"), "--theta", "10000"},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--theta: a model run uses its config.json"), r.err.constData());
        QVERIFY(!QDir(dir_.filePath("x")).exists());
    }
};

QTEST_GUILESS_MAIN(TestAttendCli)
#include "test_attend_cli.moc"

// The attention explorer's second level on the tiny Qwen2-VL fixture: per-token maps (answer tokens from
// the generation steps), the layers x heads table and its sink shares, and schemes side by side, checked
// against independent computations (a full prefill, explicit loops, separate `attend` runs, `ptd`).
#include <QDir>
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
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/analysis/region_attention.h"
#include "core/model/analysis/scheme_comparison.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "tests/support/model_folder.h"
#include "tests/support/csv_table.h"
#include "tests/support/map_figure.h"
#include "tests/support/run_ropescope.h"
#include "views/charts/attention_heatmap.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#endif

using namespace ropescope::model;
namespace views = ropescope::views;

namespace {

QJsonObject jsonFile(const QString& path)
{
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    return QJsonDocument::fromJson(f.readAll()).object();
}

// A number of a CSV table by row and column name (the answers here hold no commas).
double number(const CsvTable& table, int row, const QString& column)
{
    return table.rows.at(row).at(table.header.indexOf(column)).toDouble();
}

double totalVariation(const torch::Tensor& a, const torch::Tensor& b)
{
    return 0.5 * (a / a.sum() - b / b.sum()).abs().sum().item<double>();
}

} // namespace

class TestAttentionViews : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString model_, image_;
    const QString question_ = "What colour is the circle?";

    AttentionQuery query() const
    {
        AttentionQuery q;
        q.images = {QImage(image_)};
        q.question = question_;
        return q;
    }

    QStringList attendArgs(const QString& out) const
    {
        return {"attend", "--model", model_, "--image", image_, "--question", question_, "--output", out};
    }

private Q_SLOTS:
    void initTestCase()
    {
        model_ = dir_.filePath("model");
        QVERIFY(makeTinyModel(model_));
        // 90x60 -> a 2x3 merged grid: every cell but one is on the border, so a 4x6 image is used here.
        image_ = dir_.filePath("gradient.png");
        QVERIFY(writeGradientImage(image_));
    }

    void answerMapsAreTheGeneratingRows()
    {
        // Answer token k's map is the attention of the query that produced it, captured during generation
        // (KV cache). The same rows from one prefill over the prompt and the answer must agree.
        const ModelBundle model = ModelBundle::load(model_);
        Vlm& vlm = *model.vlm;
        AttentionQuery q = query();
        q.generate = 5;
        q.answerMaps = true;
        const AttentionRun run = runAttention(model, q);
        QCOMPARE(run.generated.size(), size_t(5));
        QVERIFY2(run.answerTokens.size() >= 2, "the fixture must answer with at least two tokens before its end token");
        const int64_t promptLength = static_cast<int64_t>(run.prompt.ids.size());
        std::vector<int64_t> ids = run.prompt.ids;
        std::vector<int64_t> rows;
        for (size_t k = 0; k < run.answerTokens.size(); ++k) {
            QCOMPARE(run.answerTokens[k].index, promptLength + static_cast<int64_t>(k));
            rows.push_back(promptLength - 1 + static_cast<int64_t>(k));
            if (k + 1 < run.answerTokens.size())
                ids.push_back(run.generated[k]);
        }
        ForwardRequest full = run.prompt.forward;
        full.inputIds = torch::tensor(ids, torch::kInt64);
        full.generate = 0;
        full.capture.selection.rows = torch::tensor(rows, torch::kInt64);
        const ForwardResult reference = vlm.run(full);
        for (size_t l = 0; l < run.layers.size(); ++l) {
            QCOMPARE(run.answerAttention[l].sizes(), reference.prefill.attentions[l].sizes());
            const double diff = (run.answerAttention[l] - reference.prefill.attentions[l]).abs().max().item<double>();
            QVERIFY2(diff < 1e-5, qPrintable(QString("layer %1: %2").arg(l).arg(diff)));
        }
        // A question token's map is its row of the prompt's capture.
        const MapToken& second = run.questionTokens.at(1);
        QVERIFY(torch::equal(run.tokenAttention(0, second), run.attention()[0].narrow(1, 1, 1)));
        QCOMPARE(second.text, QString("colour"));
    }

    void headStatsAgainstLoops()
    {
        // Sink shares by explicit loops over a random capture: 3 heads, 2 queries, a 5x7 grid.
        torch::manual_seed(3);
        const int rows = 5, cols = 7, n = rows * cols;
        const auto probs = torch::softmax(torch::randn({3, 2, n + 4}, torch::kFloat64) * 2, -1).narrow(2, 0, n); // some mass off the image
        const std::vector<HeadStats> stats = headStats(probs, rows, cols);
        QCOMPARE(stats.size(), size_t(3));
        for (int h = 0; h < 3; ++h) {
            std::vector<double> share(n, 0.0);
            double mass = 0;
            for (int qi = 0; qi < 2; ++qi) {
                double rowMass = 0;
                for (int i = 0; i < n; ++i)
                    rowMass += probs[h][qi][i].item<double>();
                mass += rowMass / 2;
                for (int i = 0; i < n; ++i)
                    share[i] += probs[h][qi][i].item<double>() / rowMass / 2;
            }
            double border = 0, entropy = 0;
            for (int i = 0; i < n; ++i) {
                const int r = i / cols, c = i % cols;
                if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1)
                    border += share[i];
                entropy -= share[i] * std::log(share[i]);
            }
            std::vector<double> sorted = share;
            std::sort(sorted.rbegin(), sorted.rend());
            QVERIFY(std::abs(stats[h].imageMass - mass) < 1e-12);
            QVERIFY(std::abs(stats[h].topShare - sorted[0]) < 1e-12); // 1% of 35 patches: one
            QVERIFY(std::abs(stats[h].borderShare - border) < 1e-12);
            QVERIFY(std::abs(stats[h].firstShare - share[0]) < 1e-12);
            QVERIFY(std::abs(stats[h].normalizedEntropy - entropy / std::log(n)) < 1e-12);
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, headStats(probs, 4, 7));
    }

    // Image region -> text against plain loops over the captured rows: per layer and token, the region's
    // probability mass and its share of the token's image mass, for the heads' mean, the max and one head.
    void regionToTextAgainstLoops()
    {
        const ModelBundle model = ModelBundle::load(model_);
        AttentionQuery q = query();
        q.generate = 3;
        q.answerMaps = true;
        const AttentionRun run = runAttention(model, q);
        QCOMPARE(run.prompt.image().rows, 4);
        QCOMPARE(run.prompt.image().cols, 6);
        const CellRegion region = CellRegion::parse("2,4,1,2"); // corners in any order
        const std::vector<int> cells = region.cells(4, 6);
        QCOMPARE(cells, (std::vector<int>{8, 9, 10, 14, 15, 16}));
        for (const HeadChoice& head : {HeadChoice{}, HeadChoice{HeadChoice::Kind::Max, 0}, HeadChoice{HeadChoice::Kind::Index, 2}}) {
            const RegionAttention r = regionAttention(run, cells, head);
            QCOMPARE(r.tokens.size(), run.questionTokens.size() + run.answerTokens.size());
            QCOMPARE(r.area, 6.0 / 24);
            for (size_t l = 0; l < run.layers.size(); ++l)
                for (size_t t = 0; t < r.tokens.size(); ++t) {
                    const torch::Tensor rows = run.tokenAttention(l, r.tokens[t]);
                    std::vector<double> in(4, 0.0), all(4, 0.0);
                    for (int h = 0; h < 4; ++h)
                        for (int c = 0; c < 24; ++c) {
                            const double p = rows[h][0][c].item<double>();
                            all[static_cast<size_t>(h)] += p;
                            if (std::find(cells.begin(), cells.end(), c) != cells.end())
                                in[static_cast<size_t>(h)] += p;
                        }
                    double mass = 0, total = 0;
                    if (head.kind == HeadChoice::Kind::Index) {
                        mass = in[2];
                        total = all[2];
                    } else if (head.kind == HeadChoice::Kind::Max) {
                        const size_t h = static_cast<size_t>(std::max_element(in.begin(), in.end()) - in.begin());
                        mass = in[h];
                        total = all[h];
                    } else {
                        for (int h = 0; h < 4; ++h) {
                            mass += in[static_cast<size_t>(h)] / 4;
                            total += all[static_cast<size_t>(h)] / 4;
                        }
                    }
                    QVERIFY2(std::abs(r.mass[l][t] - mass) < 1e-6, qPrintable(QString("layer %1 token %2").arg(l).arg(t)));
                    QVERIFY2(std::abs(r.share[l][t] - mass / total) < 1e-6, qPrintable(QString("layer %1 token %2").arg(l).arg(t)));
                }
            const std::vector<int> order = r.strongest(1, 100);
            QCOMPARE(order.size(), r.tokens.size());
            for (size_t k = 1; k < order.size(); ++k)
                QVERIFY(r.share[1][static_cast<size_t>(order[k - 1])] >= r.share[1][static_cast<size_t>(order[k])]);
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, regionAttention(run, {24}, HeadChoice{}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, regionAttention(run, {}, HeadChoice{}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("1,2,3"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("1,-2"));

        // `attend --region` writes the same numbers (region.csv), a figure and the summary; a batch item too.
        const QString out = dir_.filePath("region");
        auto cli = runRopescope(attendArgs(out) + QStringList{"--region", "2,4,1,2", "--per-token", "--max-new-tokens", "3", "--head", "2"},
                                false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        QVERIFY(QFile::exists(out + "/region.png"));
        const RegionAttention r = regionAttention(run, cells, HeadChoice{HeadChoice::Kind::Index, 2});
        QFile csv(out + "/region.csv");
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
        QCOMPARE(lines.first(), QByteArray("layer,token,token_text,answer,mass,share"));
        QCOMPARE(static_cast<size_t>(lines.size() - 1), run.layers.size() * r.tokens.size());
        for (int i = 1; i < lines.size(); ++i) {
            const QList<QByteArray> f = lines[i].split(',');
            const size_t l = static_cast<size_t>(f[0].toInt()), t = static_cast<size_t>(i - 1) % r.tokens.size();
            QCOMPARE(f[1].toLongLong(), r.tokens[t].index);
            QVERIFY(std::abs(f[4].toDouble() - r.mass[l][t]) < 1e-6);
            QVERIFY(std::abs(f[5].toDouble() - r.share[l][t]) < 1e-6);
        }
        const QJsonObject summary = jsonFile(out + "/summary.json")["region"].toObject();
        QCOMPARE(summary["cells"].toString(), QString("2,4,1,2"));
        QCOMPARE(summary["area"].toDouble(), 0.25);
        QCOMPARE(summary["per_layer"].toArray().size(), static_cast<int>(run.layers.size()));

        QFile job(dir_.filePath("region-job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QJsonDocument(QJsonObject{{"defaults", QJsonObject{{"model", model_}, {"image", image_}, {"question", question_}}},
                                            {"items",
                                             QJsonArray{QJsonObject{{"type", "attention"},
                                                                    {"output", "r.csv"},
                                                                    {"region", "2,4,1,2"},
                                                                    {"per-token", true},
                                                                    {"max-new-tokens", 3},
                                                                    {"head", "2"}}}}})
                      .toJson());
        job.close();
        cli = runRopescope({"batch", job.fileName(), "--output", dir_.filePath("region-batch")}, false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        QFile batchCsv(dir_.filePath("region-batch") + "/r.csv");
        QVERIFY(batchCsv.open(QIODevice::ReadOnly));
        QVERIFY(csv.seek(0));
        QCOMPARE(batchCsv.readAll(), csv.readAll());

        // Cells outside the grid and malformed regions are refused by flag, before anything is written.
        for (const char* bad : {"4,0", "0,6", "1,x", "1,2,3"}) {
            cli = runRopescope(attendArgs(dir_.filePath("region-bad")) + QStringList{"--region", bad}, false);
            QCOMPARE(cli.exitCode, 2);
            QVERIFY2(cli.err.contains("--region: "), cli.err.constData());
            QVERIFY(!QDir(dir_.filePath("region-bad")).exists());
        }
    }

    // Token text is free text in region.csv: a word holding a quote, a comma and "%4" (which a chained
    // QString::arg would have replaced by the next column) comes back whole from a CSV reader.
    void regionCsvKeepsTokenTextWhole()
    {
        const QString model = dir_.filePath("odd-words");
        QVERIFY(makeTinyModel(model));
        QFile tokenizer(model + "/tokenizer.json");
        QVERIFY(tokenizer.open(QIODevice::ReadWrite));
        QJsonObject tok = QJsonDocument::fromJson(tokenizer.readAll()).object();
        QJsonObject wordLevel = tok["model"].toObject();
        QJsonObject vocab = wordLevel["vocab"].toObject();
        const QString odd = "\"%4,circle";
        vocab.insert(odd, vocab.take("circle"));
        wordLevel["vocab"] = vocab;
        tok["model"] = wordLevel;
        QVERIFY(tokenizer.resize(0));
        tokenizer.write(QJsonDocument(tok).toJson());
        tokenizer.close();

        const QString out = dir_.filePath("odd-region");
        const auto cli = runRopescope({"attend", "--model", model, "--image", image_, "--question", "what colour is the " + odd + " ?",
                                       "--output", out, "--region", "0,0,1,1"},
                                      false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        const CsvTable table = CsvTable::fromFile(out + "/region.csv");
        QCOMPARE(table.header, (QStringList{"layer", "token", "token_text", "answer", "mass", "share"}));
        QStringList words;
        for (const QStringList& row : table.rows) {
            QCOMPARE(row.size(), 6);
            QVERIFY2(row[4].toDouble() >= 0 && row[5].toDouble() >= 0 && row[5].toDouble() <= 1, qPrintable(row.join('|')));
            if (row[0] == "0")
                words << row[2].trimmed();
        }
        QVERIFY2(words.contains(odd), qPrintable(words.join('|')));
    }

    // Several images in one prompt: one block per image, each image's tokens and grid, a capture over all of
    // them; shares, sinks and regions per image against loops over the captured columns; the maps drawn
    // side by side on one colour scale; `attend --image A --image B` and a batch item with "image": [A, B].
    void severalImagesOneMapEach()
    {
        const ModelBundle model = ModelBundle::load(model_);
        Vlm& vlm = *model.vlm;
        const Tokenizer& tok = *model.tokenizer;
        const QString secondPath = dir_.filePath("second.png");
        QVERIFY(QImage(image_).mirrored(true, false).scaled(112, 84).save(secondPath)); // 112x84 -> a 3x4 grid
        AttentionQuery q = query();
        q.images.push_back(QImage(secondPath));
        const AttentionRun run = runAttention(model, q);
        const AttentionRequest& a = run.prompt;
        QCOMPARE(a.images.size(), size_t(2));
        QCOMPARE(a.images[0].cells(), 24);
        QCOMPARE(a.images[1].rows, 3);
        QCOMPARE(a.images[1].cols, 4);
        QCOMPARE(a.images[1].first, 24);
        QCOMPARE(a.imageTokens.size(), size_t(36));
        const int64_t visionStart = *tok.tokenId("<|vision_start|>");
        QCOMPARE(std::count(a.ids.begin(), a.ids.end(), visionStart), 2L);
        QCOMPARE(a.imageTokens[24], a.imageTokens[23] + 3); // <|vision_end|><|vision_start|> between the images
        for (int64_t t : a.queryTokens) {
            QVERIFY(t > a.imageTokens.back());
            QVERIFY(a.ids[static_cast<size_t>(t)] != vlm.config().visionEnd && a.ids[static_cast<size_t>(t)] != visionStart);
        }
        QCOMPARE(run.questionTokens.front().text, QString("what")); // the tiny WordLevel tokenizer lowercases

        const GridShapes grids = a.grids();
        for (size_t l = 0; l < run.layers.size(); ++l) {
            const torch::Tensor p = run.attention()[l].to(torch::kFloat64); // [heads, queries, 36]
            QCOMPARE(p.size(2), 36L);
            const std::vector<double> masses = imageMasses(run.attention()[l], grids), shares = imageShares(run.attention()[l], grids);
            const int64_t heads = p.size(0), queries = p.size(1);
            double m[2] = {0, 0};
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t qi = 0; qi < queries; ++qi)
                    for (int64_t c = 0; c < 36; ++c)
                        m[c < 24 ? 0 : 1] += p[h][qi][c].item<double>() / static_cast<double>(heads * queries);
            QVERIFY(std::abs(masses[0] - m[0]) < 1e-9 && std::abs(masses[1] - m[1]) < 1e-9);
            QVERIFY(std::abs(shares[0] - m[0] / (m[0] + m[1])) < 1e-9 && std::abs(shares[0] + shares[1] - 1) < 1e-12);
            // Sinks over both images: each image's border and first token.
            const std::vector<HeadStats> stats = headStats(run.attention()[l], grids);
            for (int64_t h = 0; h < heads; ++h) {
                double border = 0, first = 0;
                for (int64_t qi = 0; qi < queries; ++qi) {
                    const torch::Tensor row = p[h][qi] / p[h][qi].sum();
                    for (int64_t c = 0; c < 36; ++c) {
                        const bool inFirst = c < 24;
                        const int64_t local = inFirst ? c : c - 24, cols = inFirst ? 6 : 4, rows = inFirst ? 4 : 3;
                        const int64_t r = local / cols, k = local % cols;
                        const double v = row[c].item<double>() / static_cast<double>(queries);
                        if (r == 0 || r == rows - 1 || k == 0 || k == cols - 1)
                            border += v;
                        if (local == 0)
                            first += v;
                    }
                }
                QVERIFY(std::abs(stats[static_cast<size_t>(h)].borderShare - border) < 1e-9);
                QVERIFY(std::abs(stats[static_cast<size_t>(h)].firstShare - first) < 1e-9);
            }
        }

        // A region on the second image is its cells, offset by the first image's tokens.
        const CellRegion region = CellRegion::parse("2:0,1,1,2");
        QCOMPARE(region.image, 1);
        QCOMPARE(region.toString(), QString("2:0,1,1,2"));
        QCOMPARE(region.tokensIn(a), (std::vector<int>{25, 26, 29, 30}));
        QCOMPARE(CellRegion::parse("0,1,1,2").tokensIn(a), (std::vector<int>{1, 2, 7, 8}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("3:0,0").tokensIn(a));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("2:3,0").tokensIn(a)); // 3 rows
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("0:1,1"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, CellRegion::parse("x:1,1"));
        const RegionAttention r = regionAttention(run, region.tokensIn(a), HeadChoice{});
        QCOMPARE(r.area, 4.0 / 36);
        const torch::Tensor last = run.attention().back().to(torch::kFloat64);
        double mass = 0;
        for (int64_t c : {25, 26, 29, 30})
            mass += last.select(2, c).mean(0)[0].item<double>();
        QVERIFY(std::abs(r.mass.back()[0] - mass) < 1e-9);

        // The maps side by side on one scale: left and right columns at 0 and 1 in both images give each
        // half its own overlay; a flat second image keeps the first's scale instead of its own.
        const views::MapPictures pictures{{a.images[0].resized, 4, 6}, {a.images[1].resized, 3, 4}};
        views::HeatmapOptions o;
        o.smoothing = 0;
        std::vector<float> first(24), second(12);
        for (int c = 0; c < 24; ++c)
            first[static_cast<size_t>(c)] = static_cast<float>(c % 6) / 5.0f;
        for (int c = 0; c < 12; ++c)
            second[static_cast<size_t>(c)] = static_cast<float>(c % 4) / 3.0f;
        std::vector<float> both = first;
        both.insert(both.end(), second.begin(), second.end());
        const QImage strip = views::attentionOverlay(pictures, both, o);
        QCOMPARE(strip.size(), QSize(168 + views::kPictureGap + 112, 112));
        QCOMPARE(strip.copy(0, 0, 168, 112), views::attentionOverlay(a.images[0].resized, first, 4, 6, o));
        QCOMPARE(strip.copy(168 + views::kPictureGap, 0, 112, 84), views::attentionOverlay(a.images[1].resized, second, 3, 4, o));
        QCOMPARE(strip.pixelColor(170, 50), QColor(Qt::white));  // the gap
        QCOMPARE(strip.pixelColor(200, 100), QColor(Qt::white)); // below the shorter image
        std::fill(both.begin() + 24, both.end(), 0.5f);
        const QImage flat = views::attentionOverlay(pictures, both, o).copy(168 + views::kPictureGap, 0, 112, 84);
        QVERIFY(flat != views::attentionOverlay(a.images[1].resized, std::vector<float>(12, 0.5f), 3, 4, o));
        // (Clicks on the strip: test_gui_attention regionToTextSelectsChartsAndShowsIn3d, which has fonts.)

        // `attend` with two images: the same shares, the maps side by side, a region on image 2, errors by flag.
        const QString out = dir_.filePath("two");
        auto cli = runRopescope(attendArgs(out) + QStringList{"--image", secondPath, "--region", "2:0,1,1,2"}, false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        const QJsonObject summary = jsonFile(out + "/summary.json");
        const QJsonArray images = summary["images"].toArray();
        QCOMPARE(images.size(), 2);
        QCOMPARE(images[1].toObject()["first_token"].toInt(), static_cast<int>(a.imageTokens[24]));
        QCOMPARE(images[1].toObject()["grid"].toObject()["cols"].toInt(), 4);
        const QJsonArray perLayer = summary["per_layer"].toArray();
        for (size_t l = 0; l < run.layers.size(); ++l) {
            const std::vector<double> shares = imageShares(run.attention()[l], grids);
            const QJsonArray written = perLayer[static_cast<int>(l)].toObject()["image_shares"].toArray();
            QVERIFY(std::abs(written[0].toDouble() - shares[0]) < 1e-6 && std::abs(written[1].toDouble() - shares[1]) < 1e-6);
        }
        QVERIFY(ropescope::test::isMapFigure(QImage(out + "/heatmap.png"), QSize(168 + views::kPictureGap + 112, 112)));
        const SafeTensors tensors = SafeTensors::open(out + "/attention.safetensors");
        QVERIFY(torch::equal(toTorch(tensors, "image_grids"), torch::tensor({4, 6, 3, 4}, torch::kInt64).reshape({2, 2})));
        QVERIFY(torch::allclose(toTorch(tensors, "attention")[1], run.attention()[1], 0, 1e-6));
        QCOMPARE(summary["region"].toObject()["cells"].toString(), QString("2:0,1,1,2"));
        QVERIFY(std::abs(summary["region"].toObject()["area"].toDouble() - 4.0 / 36) < 1e-12);

        // Schemes side by side give each scheme's split between the images; the first row is the run above.
        cli =
            runRopescope(attendArgs(dir_.filePath("two-schemes")) + QStringList{"--image", secondPath, "--schemes", "mrope,vrope"}, false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        const CsvTable schemes = CsvTable::fromFile(dir_.filePath("two-schemes") + "/schemes.csv");
        const std::vector<double> lastShares = imageShares(run.attention().back(), grids);
        const QStringList firstRow = schemes.rows.at(0).at(schemes.header.indexOf("image_shares")).split('/');
        QCOMPARE(firstRow.size(), 2);
        QVERIFY(std::abs(firstRow[0].toDouble() - lastShares[0]) < 1e-6 && std::abs(firstRow[1].toDouble() - lastShares[1]) < 1e-6);
        QVERIFY(schemes.rows.at(1).at(schemes.header.indexOf("image_shares")) !=
                schemes.rows.at(0).at(schemes.header.indexOf("image_shares")));

        QFile job(dir_.filePath("two-job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(
            QJsonDocument(QJsonObject{{"defaults", QJsonObject{{"model", model_}, {"question", question_}}},
                                      {"items",
                                       QJsonArray{QJsonObject{
                                           {"type", "attention"}, {"output", "two.json"}, {"image", QJsonArray{image_, secondPath}}}}}})
                .toJson());
        job.close();
        cli = runRopescope({"batch", job.fileName(), "--output", dir_.filePath("two-batch")}, false);
        QVERIFY2(cli.exitCode == 0, cli.err.constData());
        const QJsonObject batch = jsonFile(dir_.filePath("two-batch") + "/two.json");
        QCOMPARE(batch["images"], summary["images"]);
        QCOMPARE(batch["per_layer"], summary["per_layer"]);

        const struct {
            QStringList args;
            const char* says;
        } bad[] = {
            {{"--image", secondPath, "--region", "3:0,0"}, "--region: image 3 is not in the prompt, which has 2 images"},
            {{"--image", secondPath, "--region", "2:3,0"}, "--region: 2:3,0,3,0 is outside image 2's 3x4 grid"},
            {{"--image", image_, "--image", image_, "--image", image_, "--image", image_, "--image", image_, "--image", image_, "--image",
              image_, "--image", image_},
             "--image: at most 8 images"},
        };
        for (const auto& b : bad) {
            cli = runRopescope(attendArgs(dir_.filePath("two-bad")) + b.args, false);
            QCOMPARE(cli.exitCode, 2);
            QVERIFY2(cli.err.contains(b.says), cli.err.constData());
            QVERIFY(!QDir(dir_.filePath("two-bad")).exists());
        }
    }

    void perTokenAndLayersHeadsFiles()
    {
        const QString out = dir_.filePath("views");
        const auto r = runRopescope(
            attendArgs(out) + QStringList{"--per-token", "--layers-heads", "--max-new-tokens", "3", "--figure-format", "svg"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject summary = jsonFile(out + "/summary.json");
        const QJsonObject tokens = jsonFile(out + "/tokens.json");
        const QJsonArray list = tokens["tokens"].toArray();
        QCOMPARE(list.first().toObject()["text"].toString(), QString("what"));
        QCOMPARE(list.first().toObject()["kind"].toString(), QString("question"));
        int questions = 0;
        for (const QJsonValue& t : list)
            questions += t.toObject()["kind"].toString() == "question";
        QCOMPARE(questions, summary["query_tokens"].toInt());
        QVERIFY(QFile::exists(out + "/tokens.svg") && QFile::exists(out + "/layers_heads.svg"));
        QVERIFY(!QFile::exists(out + "/tokens.png"));

        // The table: one row per layer and head; the heads' mean mass is the summary's per-layer mass.
        const CsvTable table = CsvTable::fromFile(out + "/layers_heads.csv");
        const QJsonArray perLayer = summary["per_layer"].toArray();
        QCOMPARE(table.rows.size(), perLayer.size() * 4);
        const auto attention = toTorch(SafeTensors::open(out + "/attention.safetensors"), "attention");
        for (int l = 0; l < perLayer.size(); ++l) {
            double mass = 0;
            for (int h = 0; h < 4; ++h)
                mass += number(table, l * 4 + h, "image_mass") / 4;
            QVERIFY(std::abs(mass - perLayer[l].toObject()["image_mass"].toDouble()) < 1e-6);
            const std::vector<HeadStats> stats = headStats(attention[l], 4, 6);
            for (int h = 0; h < 4; ++h)
                QVERIFY(std::abs(number(table, l * 4 + h, "border_share") - stats[static_cast<size_t>(h)].borderShare) < 1e-8);
        }
        // The answer's rows are in the tensors: as many as answer tokens in tokens.json.
        const auto answers = toTorch(SafeTensors::open(out + "/attention.safetensors"), "answer_attention");
        QCOMPARE(answers.size(2), static_cast<int64_t>(list.size() - questions));

        // A later run without the flags removes these files (they would describe another run).
        QCOMPARE(runRopescope(attendArgs(out), false).exitCode, 0);
        for (const char* name : {"tokens.json", "tokens.svg", "layers_heads.csv", "layers_heads.svg"})
            QVERIFY2(!QFile::exists(out + "/" + name), name);
    }

    void schemesSideBySide()
    {
        const QString out = dir_.filePath("schemes");
        auto r = runRopescope(attendArgs(out) + QStringList{"--schemes", "mrope,circle:alpha=0.3,vrope", "--heatmap-layer", "1"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const CsvTable table = CsvTable::fromFile(out + "/schemes.csv");
        QCOMPARE(table.rows.size(), 3);
        QCOMPARE(number(table, 0, "shift_from_first"), 0.0);
        const QString layout = jsonFile(out + "/summary.json")["layout"].toString();
        const QJsonArray rows = jsonFile(out + "/summary.json")["schemes"].toArray();
        QCOMPARE(rows.size(), 3);
        QCOMPARE(rows[1].toObject()["scheme"].toString(), QString("circle:alpha=0.3"));
        QCOMPARE(QImage(out + "/schemes.png").isNull(), false);

        // Each row against a separate run of that scheme: the answer, the shift from mrope's map at layer 1,
        // and the PTD `ropescope ptd` gives the prompt's layout.
        torch::Tensor first;
        const QList<QStringList> flags{{"--scheme", "mrope"}, {"--scheme", "circle", "--alpha", "0.3"}, {"--scheme", "vrope"}};
        for (int i = 0; i < 3; ++i) {
            const QString single = dir_.filePath(QString("single-%1").arg(i));
            r = runRopescope(attendArgs(single) + flags[i], false);
            QVERIFY2(r.exitCode == 0, r.err.constData());
            const torch::Tensor map = attentionMap(toTorch(SafeTensors::open(single + "/attention.safetensors"), "attention")[1], -1);
            if (i == 0)
                first = map;
            QVERIFY(std::abs(number(table, i, "shift_from_first") - totalVariation(first, map)) < 1e-6);
            QCOMPARE(rows[i].toObject()["answer"].toString(), jsonFile(single + "/summary.json")["answer"].toString());
            const auto ptd = runRopescope(QStringList{"ptd", "--layout", layout, "--json"} + flags[i], false);
            QVERIFY2(ptd.exitCode == 0, ptd.err.constData());
            QVERIFY(std::abs(number(table, i, "ptd") - QJsonDocument::fromJson(ptd.out).object()["ptd"].toDouble()) < 1e-9);
        }
        QVERIFY(number(table, 1, "shift_from_first") > 1e-4);

        // A batch item writes the same table.
        QFile job(dir_.filePath("schemes-job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QJsonDocument(QJsonObject{{"defaults", QJsonObject{{"model", model_}, {"image", image_}, {"question", question_}}},
                                            {"items",
                                             QJsonArray{QJsonObject{{"type", "attention"},
                                                                    {"output", "s.csv"},
                                                                    {"schemes", QJsonArray{"mrope", "circle:alpha=0.3", "vrope"}},
                                                                    {"heatmap-layer", 1}}}}})
                      .toJson());
        job.close();
        r = runRopescope({"batch", job.fileName(), "--output", dir_.filePath("schemes-batch")}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const CsvTable batch = CsvTable::fromFile(dir_.filePath("schemes-batch") + "/s.csv");
        QCOMPARE(batch.header, table.header);
        QCOMPARE(batch.rows.size(), table.rows.size());
        for (int i = 0; i < table.rows.size(); ++i) {
            QCOMPARE(batch.rows[i].mid(0, 2), table.rows[i].mid(0, 2)); // scheme, answer
            for (const QString& column : table.header.mid(2))           // PTD sums run in parallel: equal to rounding
                QVERIFY(std::abs(number(batch, i, column) - number(table, i, column)) < 1e-9);
        }
    }

    void schemesErrors()
    {
        const QString out = dir_.filePath("bad");
        for (const auto& [value, mentions] : {std::pair{"mrope", "expected 2 to 6 schemes"},
                                              {"mrope,a,b,c,d,e,f", "expected 2 to 6 schemes"},
                                              {"mrope,circle:alpha", "'circle:alpha': expected key=value"},
                                              {"mrope,circle:colour=3", "'circle:colour=3'"},
                                              {"mrope,spiral", "unknown scheme 'spiral'"},
                                              {"mrope,circle:age=XYZ", "'circle:age=XYZ'"}}) {
            const auto r = runRopescope(attendArgs(out) + QStringList{"--schemes", value}, false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(mentions), r.err.constData());
        }
        const auto r = runRopescope(attendArgs(out) + QStringList{"--schemes", "mrope,vrope", "--scheme", "circle"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--schemes: give each scheme's parameters in its entry"), r.err.constData());
        QVERIFY(!QDir(out).exists());
    }

    void emptyQuestionIsRefused()
    {
        const ModelBundle model = ModelBundle::load(model_);
        AttentionQuery q = query();
        q.question = "";
        try {
            runAttention(model, q);
            QFAIL("an empty question ran");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("the question is empty"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestAttentionViews)
#include "test_attention_views.moc"

// The attention explorer's second level on the tiny Qwen2-VL fixture: per-token maps (answer tokens from
// the generation steps), the layers x heads table and its sink shares, and schemes side by side, checked
// against independent computations (a full prefill, explicit loops, separate `attend` runs, `ptd`).
#include "../cli/run_ropescope.h"
#include "tiny_model.h"
#include "../unit/csv_table.h"
#include "model/attention_run.h"
#include "model/attention_stats.h"
#include "model/region_attention.h"
#include "model/image_processor.h"
#include "model/scheme_comparison.h"
#include "model/tensor_io.h"
#include "model/tokenizer.h"
#include "model/vlm.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace ropescope::model;

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
        q.image = QImage(image_);
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
        Vlm vlm(model_);
        const Tokenizer tok = Tokenizer::load(model_ + "/tokenizer.json");
        AttentionQuery q = query();
        q.generate = 5;
        q.answerMaps = true;
        const AttentionRun run = runAttention(vlm, tok, model_, q);
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
        Vlm vlm(model_);
        const Tokenizer tok = Tokenizer::load(model_ + "/tokenizer.json");
        AttentionQuery q = query();
        q.generate = 3;
        q.answerMaps = true;
        const AttentionRun run = runAttention(vlm, tok, model_, q);
        QCOMPARE(run.prompt.gridRows, 4);
        QCOMPARE(run.prompt.gridCols, 6);
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
        auto cli = runRopescope(attendArgs(out) + QStringList{"--region", "2,4,1,2", "--per-token", "--max-new-tokens", "3", "--head", "2"}, false);
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
                                            {"items", QJsonArray{QJsonObject{{"type", "attention"}, {"output", "r.csv"}, {"region", "2,4,1,2"},
                                                                             {"per-token", true}, {"max-new-tokens", 3}, {"head", "2"}}}}})
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

    void perTokenAndLayersHeadsFiles()
    {
        const QString out = dir_.filePath("views");
        const auto r = runRopescope(attendArgs(out) + QStringList{"--per-token", "--layers-heads", "--max-new-tokens", "3", "--figure-format", "svg"},
                                    false);
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
                                            {"items", QJsonArray{QJsonObject{{"type", "attention"},
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
            for (const QString& column : table.header.mid(2)) // PTD sums run in parallel: equal to rounding
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
        Vlm vlm(model_);
        const Tokenizer tok = Tokenizer::load(model_ + "/tokenizer.json");
        AttentionQuery q = query();
        q.question = "";
        try {
            runAttention(vlm, tok, model_, q);
            QFAIL("an empty question ran");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("the question is empty"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestAttentionViews)
#include "test_attention_views.moc"

// The model's own positional prior (mean q, mean k, rotated as the decoder rotates) against an independent
// computation with plain loops over the checkpoint's own weights: layer 0 of the tiny Qwen2-VL fixture,
// for a question token and for an answer token (whose query sits past the prompt, as decoding places it).
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
#include "core/model/analysis/own_prior.h"
#include "core/model/engine/checkpoint.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "tests/support/model_folder.h"
#include "tests/support/csv_table.h"
#include "tests/support/run_ropescope.h"

#include <torch/types.h>

#include <cmath>
#include <vector>
#endif

using namespace ropescope::model;

namespace {

using Vec = std::vector<double>;

// NeoX rotation of x by the position p (one value per component) under the table's allocation.
Vec rotated(const Vec& x, const std::vector<double>& p, const ropescope::geometry::FrequencyAllocation& a, double theta)
{
    const size_t d = x.size(), half = d / 2;
    Vec out(d);
    for (size_t j = 0; j < half; ++j) {
        const double angle = p[static_cast<size_t>(a.componentOf(static_cast<int>(j)))] *
            std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(d));
        out[j] = x[j] * std::cos(angle) - x[j + half] * std::sin(angle);
        out[j + half] = x[j + half] * std::cos(angle) + x[j] * std::sin(angle);
    }
    return out;
}

// Mean over the prompt of W x_norm + b, for rows [head * d, (head + 1) * d) of the projection.
Vec meanProjection(const torch::Tensor& normed, const torch::Tensor& w, const torch::Tensor& b, int head, int d)
{
    Vec out(static_cast<size_t>(d), 0.0);
    const auto n = normed.accessor<double, 2>();
    const auto W = w.accessor<double, 2>();
    const auto B = b.accessor<double, 1>();
    for (int r = 0; r < d; ++r) {
        const int row = head * d + r;
        for (int64_t t = 0; t < normed.size(0); ++t) {
            double s = B[row];
            for (int64_t c = 0; c < normed.size(1); ++c)
                s += W[row][c] * n[t][c];
            out[static_cast<size_t>(r)] += s / static_cast<double>(normed.size(0));
        }
    }
    return out;
}

} // namespace

class TestOwnPrior : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_, image_;
    const QString question_ = "what color is the circle";

    QImage image() const
    {
        QImage image(168, 112, QImage::Format_RGB888);
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                image.setPixelColor(x, y, QColor(x * 255 / image.width(), y * 255 / image.height(), 90));
        return image;
    }

private Q_SLOTS:
    void initTestCase()
    {
        model_ = dir_.filePath("model");
        QVERIFY(makeTinyModel(model_));
        image_ = dir_.filePath("gradient.png");
        QVERIFY(image().save(image_));
    }

    void pearsonOfKnownMaps()
    {
        QCOMPARE(pearson({1, 2, 3}, {2, 4, 6}), 1.0);
        QCOMPARE(pearson({1, 2, 3}, {3, 2, 1}), -1.0);
        QCOMPARE(pearson({1, 1, 1}, {3, 2, 1}), 0.0); // flat: no correlation, not NaN
    }

    void priorIsTheMeanQueryKeyScore()
    {
        const ModelBundle model = ModelBundle::load(model_);
        Vlm& vlm = *model.vlm;
        AttentionQuery q;
        q.images = {image()};
        q.question = question_;
        q.generate = 3;
        q.answerMaps = true;
        q.meanQueryKey = true;
        const AttentionRun run = runAttention(model, q);
        QVERIFY(run.answerTokens.size() >= 2);

        const Checkpoint ck = Checkpoint::open(model_);
        const TextConfig& text = ck.config().text;
        const int heads = static_cast<int>(text.heads), kvHeads = static_cast<int>(text.kvHeads), d = static_cast<int>(text.headDim());
        const int64_t hidden = text.hidden;
        // Layer 0's input is the embedding sequence: RMSNorm, then the q and k projections.
        const torch::Tensor x = run.result.inputsEmbeds.to(torch::kFloat64);
        const torch::Tensor w = ck.tensor("model.layers.0.input_layernorm.weight", {hidden}).to(torch::kFloat64);
        const torch::Tensor normed = (x / (x.pow(2).mean(1, true) + text.rmsEps).sqrt() * w).contiguous();
        const auto weight = [&](const char* name, int64_t rows) {
            return ck.tensor(name, {rows, hidden}).to(torch::kFloat64).contiguous();
        };
        const auto bias = [&](const char* name, int64_t rows) { return ck.tensor(name, {rows}).to(torch::kFloat64).contiguous(); };
        const torch::Tensor wq = weight("model.layers.0.self_attn.q_proj.weight", heads * d),
                            bq = bias("model.layers.0.self_attn.q_proj.bias", heads * d);
        const torch::Tensor wk = weight("model.layers.0.self_attn.k_proj.weight", kvHeads * d),
                            bk = bias("model.layers.0.self_attn.k_proj.bias", kvHeads * d);

        const ropescope::geometry::PositionTable& table = run.result.layerTables[0];
        auto positionOf = [&](int64_t index) {
            std::vector<double> p(static_cast<size_t>(table.components()));
            for (int c = 0; c < table.components(); ++c)
                p[static_cast<size_t>(c)] =
                    index < table.size() ? table.positions(index, c) : table.positions.maxCoeff() + 1 + double(index - table.size());
            return p;
        };
        const MapToken tokens[] = {run.questionTokens.front(), run.answerTokens[1]};
        QCOMPARE(queryIndex(run, tokens[1]), static_cast<int64_t>(run.prompt.ids.size())); // answer token 1 came from answer token 0
        for (const MapToken& token : tokens)
            for (int head = 0; head < heads; ++head) {
                const OwnPrior prior = ownPositionalPrior(vlm, run, 0, head, token);
                const Vec qRot =
                    rotated(meanProjection(normed, wq, bq, head, d), positionOf(queryIndex(run, token)), table.allocation, text.ropeTheta);
                const Vec k = meanProjection(normed, wk, bk, head / (heads / kvHeads), d);
                std::vector<double> scores;
                for (int64_t i : run.prompt.imageTokens) {
                    const Vec kRot = rotated(k, positionOf(i), table.allocation, text.ropeTheta);
                    double s = 0;
                    for (int m = 0; m < d; ++m)
                        s += qRot[static_cast<size_t>(m)] * kRot[static_cast<size_t>(m)];
                    scores.push_back(s / std::sqrt(double(d)));
                }
                double top = scores[0], sum = 0;
                for (double s : scores)
                    top = std::max(top, s);
                for (double& s : scores)
                    sum += (s = std::exp(s - top));
                QCOMPARE(prior.prior.size(), scores.size());
                for (size_t i = 0; i < scores.size(); ++i)
                    QVERIFY2(std::abs(prior.prior[i] - scores[i] / sum) < 1e-5,
                             qPrintable(QString("head %1 cell %2: %3 vs %4").arg(head).arg(i).arg(prior.prior[i]).arg(scores[i] / sum)));
                const std::vector<float> actual = headMap(run.tokenAttention(0, token), HeadChoice{HeadChoice::Kind::Index, head});
                QCOMPARE(prior.actual, actual);
                QCOMPARE(prior.correlation, pearson(prior.prior, actual));
                QVERIFY(prior.correlation >= -1 && prior.correlation <= 1);
            }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ownPositionalPrior(vlm, run, 0, heads, tokens[0]));
        q.meanQueryKey = false;
        const AttentionRun without = runAttention(model, q);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ownPositionalPrior(vlm, without, 0, 0, tokens[0]));
    }

    void attendAndBatchWriteIt()
    {
        const QString out = dir_.filePath("attend");
        const QStringList args{"attend", "--model", model_, "--image", image_, "--question", question_, "--output", out};
        auto r = runRopescope(args + QStringList{"--own-prior"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(QFile::exists(out + "/own_prior.png"));
        // One row per layer and head, for the question's last token: the core's correlations.
        const ModelBundle model = ModelBundle::load(model_);
        Vlm& vlm = *model.vlm;
        AttentionQuery q;
        q.images = {QImage(image_)};
        q.question = question_;
        q.meanQueryKey = true;
        const AttentionRun run = runAttention(model, q);
        const CsvTable table = CsvTable::fromFile(out + "/own_prior.csv");
        QCOMPARE(table.header, (QStringList{"layer", "head", "token", "correlation"}));
        QCOMPARE(table.rows.size(), 2 * 4);
        QFile summaryFile(out + "/summary.json");
        QVERIFY(summaryFile.open(QIODevice::ReadOnly));
        const QJsonObject summary = QJsonDocument::fromJson(summaryFile.readAll()).object()["own_prior"].toObject();
        QCOMPARE(summary["token"].toInt(), static_cast<int>(run.questionTokens.back().index));
        for (int layer = 0; layer < 2; ++layer) {
            double mean = 0;
            for (int head = 0; head < 4; ++head) {
                const QStringList& row = table.rows[layer * 4 + head];
                QCOMPARE(row[0].toInt(), layer);
                QCOMPARE(row[1].toInt(), head);
                const double correlation = ownPositionalPrior(vlm, run, layer, head, run.questionTokens.back()).correlation;
                QVERIFY2(std::abs(row[3].toDouble() - correlation) < 1e-6, qPrintable(row.join(',')));
                mean += correlation / 4;
            }
            QVERIFY(std::abs(summary["per_layer"].toArray()[layer].toObject()["mean_correlation"].toDouble() - mean) < 1e-6);
        }

        // A batch item writes the same table.
        QFile job(dir_.filePath("prior-job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(
            QJsonDocument(QJsonObject{{"defaults", QJsonObject{{"model", model_}, {"image", image_}, {"question", question_}}},
                                      {"items", QJsonArray{QJsonObject{{"type", "attention"}, {"output", "p.csv"}, {"own-prior", true}}}}})
                .toJson());
        job.close();
        r = runRopescope({"batch", job.fileName(), "--output", dir_.filePath("batch")}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile a(out + "/own_prior.csv"), b(dir_.filePath("batch") + "/p.csv");
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QCOMPARE(b.readAll(), a.readAll());

        // A later run without the flag removes the files (they would describe another run).
        QCOMPARE(runRopescope(args, false).exitCode, 0);
        QVERIFY(!QFile::exists(out + "/own_prior.csv") && !QFile::exists(out + "/own_prior.png"));
    }
};

QTEST_APPLESS_MAIN(TestOwnPrior)
#include "test_own_prior.moc"

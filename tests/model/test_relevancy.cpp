// Gradient relevancy (Chefer et al. 2021) against an independent computation: the tiny Qwen2-VL fixture's
// decoder written out again here in float64 torch operations from the checkpoint's own weights (RMSNorm,
// biased q/k/v, NeoX rotation from the position table's allocation and theta, grouped-query causal
// softmax, gated MLP, LM head), each layer's attention probabilities kept with their gradient by autograd,
// and the relevance rule applied with plain loops.
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
#include "core/model/analysis/relevancy.h"
#include "core/model/engine/checkpoint.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "tests/support/model_folder.h"
#include "tests/support/run_ropescope.h"

#include <torch/types.h>

#include <cmath>
#include <vector>
#endif

using namespace ropescope::model;

class TestRelevancy : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_, image_;

private Q_SLOTS:
    void initTestCase()
    {
        model_ = dir_.filePath("model");
        QVERIFY(makeTinyModel(model_));
        image_ = dir_.filePath("image.png");
        QVERIFY(writeGradientImage(image_));
    }

    void matchesAnIndependentDecoder_data()
    {
        QTest::addColumn<bool>("alternating");
        QTest::newRow("model's own scheme") << false;
        QTest::newRow("circle + AGE CM (a table per layer)") << true;
    }

    void matchesAnIndependentDecoder()
    {
        QFETCH(bool, alternating);
        const ModelBundle model = ModelBundle::load(model_);
        Vlm& vlm = *model.vlm;
        AttentionQuery q;
        q.images = {QImage(image_)};
        q.question = "what color is the circle";
        if (alternating) {
            q.scheme.params.kind = ropescope::geometry::SchemeKind::Circle;
            q.scheme.age = "CM";
        }
        const AttentionRun run = runAttention(model, q);
        const Relevancy rel = gradientRelevancy(vlm, run);
        QCOMPARE(rel.target, run.generated.front());
        QCOMPARE(rel.map.size(), run.prompt.imageTokens.size());

        // The reference decoder.
        const Checkpoint ck = Checkpoint::open(model_);
        const TextConfig& c = ck.config().text;
        const int64_t H = c.heads, Hkv = c.kvHeads, d = c.headDim(), hidden = c.hidden;
        const auto n = static_cast<int64_t>(run.prompt.ids.size());
        const auto w = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(name, shape).to(torch::kFloat64); };
        const auto rms = [&](const torch::Tensor& x, const torch::Tensor& g) {
            return x / (x.pow(2).mean(-1, true) + c.rmsEps).sqrt() * g;
        };
        torch::Tensor x = run.result.inputsEmbeds.to(torch::kFloat64).detach().requires_grad_(true); // roots the graph
        std::vector<torch::Tensor> probs;
        for (int l = 0; l < c.layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            const auto h = rms(x, w(p + "input_layernorm.weight", {hidden}));
            auto proj = [&](const char* what, int64_t heads) {
                const auto y = torch::matmul(h, w(p + "self_attn." + what + "_proj.weight", {heads * d, hidden}).t()) +
                    w(p + "self_attn." + what + "_proj.bias", {heads * d});
                return y.view({n, heads, d}).transpose(0, 1); // [heads, n, d]
            };
            auto qh = proj("q", H), kh = proj("k", Hkv), vh = proj("v", Hkv);
            // NeoX rotation: pair j of each head turns by position[component(j)] * theta^(-2j/d).
            const ropescope::geometry::PositionTable& table = run.result.layerTables[static_cast<size_t>(l)];
            std::vector<double> cosv(static_cast<size_t>(n * d)), sinv(static_cast<size_t>(n * d));
            for (int64_t t = 0; t < n; ++t)
                for (int64_t j = 0; j < d / 2; ++j) {
                    const double angle = table.positions(t, table.allocation.componentOf(static_cast<int>(j))) *
                        std::pow(c.ropeTheta, -2.0 * static_cast<double>(j) / static_cast<double>(d));
                    for (int64_t m : {j, j + d / 2}) {
                        cosv[static_cast<size_t>(t * d + m)] = std::cos(angle);
                        sinv[static_cast<size_t>(t * d + m)] = std::sin(angle);
                    }
                }
            const auto cosT = torch::tensor(cosv, torch::kFloat64).view({n, d}), sinT = torch::tensor(sinv, torch::kFloat64).view({n, d});
            const auto rotate = [&](const torch::Tensor& t) {
                const auto halfTurn = torch::cat({-t.narrow(-1, d / 2, d / 2), t.narrow(-1, 0, d / 2)}, -1);
                return t * cosT + halfTurn * sinT;
            };
            qh = rotate(qh);
            kh = rotate(kh).repeat_interleave(H / Hkv, 0);
            vh = vh.repeat_interleave(H / Hkv, 0);
            const auto causal = torch::full({n, n}, -INFINITY, torch::kFloat64).triu(1);
            auto a = torch::softmax(torch::matmul(qh, kh.transpose(1, 2)) / std::sqrt(double(d)) + causal, -1);
            a.retain_grad();
            probs.push_back(a);
            const auto ctx = torch::matmul(a, vh).transpose(0, 1).reshape({n, H * d});
            x = x + torch::matmul(ctx, w(p + "self_attn.o_proj.weight", {hidden, H * d}).t());
            const auto post = rms(x, w(p + "post_attention_layernorm.weight", {hidden}));
            const auto gate = torch::matmul(post, w(p + "mlp.gate_proj.weight", {c.intermediate, hidden}).t());
            const auto up = torch::matmul(post, w(p + "mlp.up_proj.weight", {c.intermediate, hidden}).t());
            x = x + torch::matmul(torch::silu(gate) * up, w(p + "mlp.down_proj.weight", {hidden, c.intermediate}).t());
        }
        const auto logits = torch::matmul(rms(x, w("model.norm.weight", {hidden})), w("lm_head.weight", {c.vocab, hidden}).t());
        QCOMPARE(logits[n - 1].argmax().item<int64_t>(), rel.target); // the same answer
        logits[n - 1][rel.target].backward();

        // R = I; R += mean_h[(dA * A)^+] R, by loops.
        std::vector<double> R(static_cast<size_t>(n * n), 0.0);
        for (int64_t i = 0; i < n; ++i)
            R[static_cast<size_t>(i * n + i)] = 1;
        for (const torch::Tensor& a : probs) {
            const torch::Tensor values = a.detach();
            const auto A = values.accessor<double, 3>();
            const torch::Tensor gradient = a.grad();
            const auto G = gradient.accessor<double, 3>();
            std::vector<double> bar(static_cast<size_t>(n * n), 0.0), next = R;
            for (int64_t h = 0; h < H; ++h)
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t j = 0; j < n; ++j)
                        bar[static_cast<size_t>(i * n + j)] += std::max(0.0, G[h][i][j] * A[h][i][j]) / double(H);
            for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < n; ++j)
                    for (int64_t k = 0; k < n; ++k)
                        next[static_cast<size_t>(i * n + j)] += bar[static_cast<size_t>(i * n + k)] * R[static_cast<size_t>(k * n + j)];
            R = next;
        }
        double top = 0;
        for (int64_t t : run.prompt.imageTokens)
            top = std::max(top, std::abs(R[static_cast<size_t>((n - 1) * n + t)]));
        QVERIFY2(top > 1e-6, "relevance on the image must not vanish");
        for (size_t k = 0; k < rel.map.size(); ++k) {
            const double expected = R[static_cast<size_t>((n - 1) * n + run.prompt.imageTokens[k])];
            QVERIFY2(std::abs(rel.map[k] - expected) <= 1e-4 * top,
                     qPrintable(QString("image token %1: %2 vs %3 (largest %4)").arg(k).arg(rel.map[k]).arg(expected).arg(top)));
        }
        QVERIFY(rel.textShare >= 0 && rel.textShare <= 1);

        // Its correlation with the answer row's attention (heads' mean, last captured layer), by hand.
        const torch::Tensor last = run.attention().back(); // [heads, question tokens, image tokens]
        const torch::Tensor row = last.select(1, last.size(1) - 1).to(torch::kFloat64).mean(0);
        const torch::Tensor m = torch::tensor(std::vector<double>(rel.map.begin(), rel.map.end()), torch::kFloat64);
        const torch::Tensor dm = m - m.mean(), dr = row - row.mean();
        const double r = (dm * dr).sum().item<double>() / std::sqrt((dm * dm).sum().item<double>() * (dr * dr).sum().item<double>());
        QVERIFY2(std::abs(rel.attentionCorrelation - r) < 1e-5, qPrintable(QString("r %1 vs %2").arg(rel.attentionCorrelation).arg(r)));
    }

    // `attend --relevancy` writes the map and the summary's numbers; a batch item writes the same map.
    void attendAndBatchWriteIt()
    {
        const QString out = dir_.filePath("attend");
        const QStringList args{"attend", "--model", model_, "--image", image_, "--question", "what color is the circle", "--output", out};
        auto r = runRopescope(args + QStringList{"--relevancy"}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(out + "/summary.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject rel = QJsonDocument::fromJson(f.readAll()).object()["relevancy"].toObject();
        QVERIFY(rel["text_share"].toDouble() >= 0 && rel["text_share"].toDouble() <= 1);
        const double corr = rel["correlation_with_attention"].toDouble(-2);
        QVERIFY(corr >= -1 && corr <= 1);
        const QImage map(out + "/relevancy.png");
        QCOMPARE(map.size(), QSize(168, 112));
        QVERIFY(map != QImage(out + "/heatmap.png"));

        QFile job(dir_.filePath("job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QJsonDocument(
                      QJsonObject{{"defaults", QJsonObject{{"model", model_}, {"image", image_}, {"question", "what color is the circle"}}},
                                  {"items", QJsonArray{QJsonObject{{"type", "attention"}, {"output", "rel.png"}, {"relevancy", true}}}}})
                      .toJson());
        job.close();
        r = runRopescope({"batch", job.fileName(), "--output", dir_.filePath("batch")}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(QImage(dir_.filePath("batch") + "/rel.png").convertToFormat(QImage::Format_RGB888),
                 map.convertToFormat(QImage::Format_RGB888));
        // A later run without the flag removes the map (it would describe another run).
        QCOMPARE(runRopescope(args, false).exitCode, 0);
        QVERIFY(!QFile::exists(out + "/relevancy.png"));
    }
};

QTEST_GUILESS_MAIN(TestRelevancy)
#include "test_relevancy.moc"

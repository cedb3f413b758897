// Parity with Hugging Face transformers 5.3 (eager, float32) on the tiny Qwen3.5 fixture in
// tests/data/fixtures/qwen35-tiny (README there): a hybrid decoder of Gated DeltaNet and gated-attention
// layers with partial, interleaved M-RoPE. Every tensor the fixture holds, through the normal loader and
// model code with scheme mrope, at the fixture README's tolerances.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "core/model/engine/gated_deltanet.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

#include <ATen/record_function.h>

#include <tuple>

#include "tests/support/parity.h"
#endif

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::fixture;

namespace {

// Operators the caller dispatches while `f` runs on this thread, counted with LibTorch's RecordFunction hook (what
// its profiler sees): top-level calls only, as a GPU would launch them. The operators a CPU kernel calls inside
// (a batched solve's per-matrix selects) are not the caller's and are left out.
thread_local int64_t dispatched = 0, depth = 0;

template <class F> int64_t countOperators(F&& f)
{
    dispatched = depth = 0;
    const auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(
                                                       [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
                                                           if (depth++ == 0)
                                                               ++dispatched;
                                                           return nullptr;
                                                       },
                                                       [](const at::RecordFunction&, at::ObserverContext*) { --depth; })
                                                       .scopes({at::RecordScope::FUNCTION}));
    f();
    at::removeCallback(handle);
    return dispatched;
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

    // The rule written token by token (what the chunked closed form must equal): the outputs and the final state.
    static std::pair<torch::Tensor, torch::Tensor> recurrence(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                              const torch::Tensor& g, const torch::Tensor& beta, const torch::Tensor& s0)
    {
        const int64_t B = q.size(0), H = q.size(1), L = q.size(2);
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
        return {torch::stack(outs, 2), S};
    }

    // Random inputs of the rule: B sequences of L tokens, 3 heads, dk 5, dv 4; unit keys and queries, decays from
    // nearly none to nearly total, and a state carried in.
    static std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor>
    ruleInputs(uint64_t seed, int64_t B, int64_t L)
    {
        torch::manual_seed(seed);
        const int64_t H = 3, dk = 5, dv = 4;
        auto unit = [](torch::Tensor x) { return x / x.norm(2, -1, true); };
        auto q = unit(torch::randn({B, H, L, dk}));
        auto k = unit(torch::randn({B, H, L, dk}));
        auto v = torch::randn({B, H, L, dv});
        auto g = -torch::rand({B, H, L}) * 4.0;
        auto beta = torch::rand({B, H, L});
        return {q, k, v, g, beta, torch::randn({B, H, dk, dv})};
    }

    // The chunked closed form against the rule written token by token, across chunk edges, from a state
    // carried in, with decays from nearly none to nearly total.
    void chunkedRuleEqualsTheRecurrence()
    {
        const auto [q, k, v, g, beta, s0] = ruleInputs(7, 2, 37);
        const auto [want, S] = recurrence(q, k, v, g, beta, s0);
        for (int64_t chunk : {1, 4, 16, 64}) {
            torch::Tensor state = s0.clone();
            const auto got = gatedDeltaRule(q, k, v, g, beta, state, chunk);
            EXPECT_CLOSE(got, want, 1e-5, QString("outputs, chunk %1").arg(chunk));
            EXPECT_CLOSE(state, S, 1e-5, QString("state, chunk %1").arg(chunk));
        }
    }

    // Decoding feeds the rule one token at a time, which takes its own short form: token by token from a state
    // carried in, the outputs and the final state of the recurrence, in few operators: 25 as RecordFunction
    // counts them (views and no-op casts included), where the chunk form took 78 for one token.
    void decodingStepsEqualTheRecurrence()
    {
        const int64_t L = 6;
        torch::Tensor q, k, v, g, beta, s0; // named variables: the operator count's lambda captures them
        std::tie(q, k, v, g, beta, s0) = ruleInputs(11, 1, L);
        const auto [want, S] = recurrence(q, k, v, g, beta, s0);
        torch::Tensor state = s0.clone();
        std::vector<torch::Tensor> outs;
        for (int64_t t = 0; t < L; ++t)
            outs.push_back(gatedDeltaRule(q.narrow(2, t, 1), k.narrow(2, t, 1), v.narrow(2, t, 1), g.narrow(2, t, 1), beta.narrow(2, t, 1),
                                          state, 64));
        EXPECT_CLOSE(torch::cat(outs, 2), want, 1e-5, "outputs");
        EXPECT_CLOSE(state, S, 1e-5, "state");
        const int64_t ops = countOperators([&] {
            gatedDeltaRule(q.narrow(2, 0, 1), k.narrow(2, 0, 1), v.narrow(2, 0, 1), g.narrow(2, 0, 1), beta.narrow(2, 0, 1), state, 64);
        });
        qInfo("gatedDeltaRule, one token: %lld operators", static_cast<long long>(ops));
        QVERIFY2(ops <= 30, qPrintable(QString("%1 operators for one token").arg(ops)));
    }

    // The chunk-parallel form: everything that does not depend on the running state is computed for all chunks
    // at once, so each further chunk adds only the sequential recurrence. Counted with LibTorch's own
    // RecordFunction hook (top-level operators, as a GPU launches them): a prompt of 16 chunks against one of 8
    // adds at most 3 operators per chunk (a slice, its in-place baddbmm_, the next state's view: one kernel);
    // the chunk-by-chunk form before it added 53 per chunk, and the two out-of-place baddbmm after it 2 (4 kernels).
    void deltaRuleDispatchesFewOperatorsPerChunk()
    {
        auto operators = [](int64_t length) {
            torch::manual_seed(5);
            const int64_t B = 1, H = 4, dk = 16, dv = 16;
            const auto q = torch::randn({B, H, length, dk}) * 0.2, k = torch::randn({B, H, length, dk}) * 0.2;
            const auto v = torch::randn({B, H, length, dv}), g = -torch::rand({B, H, length}), beta = torch::rand({B, H, length});
            return countOperators([&] {
                torch::Tensor state;
                gatedDeltaRule(q, k, v, g, beta, state, 64);
            });
        };
        const int64_t eight = operators(8 * 64), sixteen = operators(16 * 64);
        qInfo("gatedDeltaRule: %lld operators at 8 chunks, %lld at 16: %.2f per chunk", static_cast<long long>(eight),
              static_cast<long long>(sixteen), static_cast<double>(sixteen - eight) / 8.0);
        QVERIFY2(sixteen - eight <= 3 * 8, qPrintable(QString("%1 operators per chunk").arg(static_cast<double>(sixteen - eight) / 8.0)));
    }

    // Under autograd the rule takes its out-of-place form (in-place slices of one buffer cannot be differentiated):
    // the same output and state as the in-place form, and the gradient the token-by-token rule gives.
    void deltaRuleUnderAutogradMatchesAndDifferentiates()
    {
        torch::manual_seed(9);
        const int64_t B = 1, H = 2, L = 150, dk = 8, dv = 8; // three chunks of 64, the last one padded
        const auto q = torch::randn({B, H, L, dk}) * 0.3, k = torch::randn({B, H, L, dk}) * 0.3, v = torch::randn({B, H, L, dv});
        const auto g = -torch::rand({B, H, L}), beta = torch::rand({B, H, L});
        torch::Tensor plainState;
        torch::Tensor plain;
        {
            torch::NoGradGuard noGrad;
            plain = gatedDeltaRule(q, k, v, g, beta, plainState, 64);
        }
        const auto vTracked = v.clone().requires_grad_(true);
        torch::Tensor trackedState;
        const auto tracked = gatedDeltaRule(q, k, vTracked, g, beta, trackedState, 64);
        QVERIFY(tracked.requires_grad());
        EXPECT_CLOSE(tracked.detach(), plain, 1e-5, QString("outputs"));
        EXPECT_CLOSE(trackedState.detach(), plainState, 1e-5, QString("state"));
        (tracked.sum() + trackedState.sum()).backward();

        const auto vReference = v.clone().requires_grad_(true);
        const auto [refOut, refState] = recurrence(q, k, vReference, g, beta, torch::zeros({B, H, dk, dv}));
        (refOut.sum() + refState.sum()).backward();
        EXPECT_CLOSE(vTracked.grad(), vReference.grad(), 1e-4, QString("d/dv"));
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
};

QTEST_APPLESS_MAIN(TestQwen35Parity)
#include "test_qwen35_parity.moc"

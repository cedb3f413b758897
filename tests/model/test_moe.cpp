// The mixture-of-experts block (qwen3_5_moe, qwen3_vl_moe, glm4v_moe): against a token-by-token computation from
// the checkpoint's own tensors, loaded and packed alike, on any cores and in any pass; the expert layouts (per
// expert, the Hub's fused form, transformers 5's fused form, sharded) giving one model; the few-rows kernel and the
// pool of cores it runs on; expert usage against the fixtures' routers.
// Not rows of test_family_parity: these are unit cases of the engine's MoE parts against rules written out here
// (and of the kernels and the thread pool, which no family owns), not a family's comparison with transformers.
// The families' MoE configs and their refused router settings are their rows there; the fixtures' set-up is
// tests/support/family_fixtures.h.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "core/model/analysis/expert_usage.h"
#include "core/model/engine/blas_kernels.h"
#include "core/model/engine/checkpoint.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/moe_block.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"
#include "kernels/linear_few_rows.h"

#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/nn/functional/linear.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <algorithm>
#include <dlfcn.h>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "tests/support/family_fixtures.h"
#include "tests/support/parity.h"
#endif

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::configOf;
using ropescope::test::fixture;
using ropescope::test::refusal;
using ropescope::test::requestFor;

namespace {

// A fixture's main case as a run that records the routers and every position's logits.
ForwardRequest imageRequest(const QString& family)
{
    ForwardRequest req = requestFor(family);
    req.capture.allLogits = true;
    req.capture.routers = true;
    return req;
}

// A model folder holding `family`'s config and the given tensors (in `shards` files with an index when > 1).
bool writeFolder(const QString& dir, const QString& family, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                 int shards = 1)
{
    if (!QFile::copy(fixture(family + "/config.json"), dir + "/config.json"))
        return false;
    std::vector<SafeTensorsWriter> writers(static_cast<size_t>(shards));
    QJsonObject map;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const size_t s = i % writers.size();
        addTensor(writers[s], tensors[i].first, tensors[i].second.contiguous());
        map[QString::fromStdString(tensors[i].first)] = QString("model-%1.safetensors").arg(s);
    }
    for (size_t s = 0; s < writers.size(); ++s) {
        QFile f(shards == 1 ? dir + "/model.safetensors" : dir + QString("/model-%1.safetensors").arg(s));
        if (!f.open(QIODevice::WriteOnly) || f.write(writers[s].bytes()) <= 0)
            return false;
    }
    if (shards > 1) {
        QFile index(dir + "/model.safetensors.index.json");
        if (!index.open(QIODevice::WriteOnly) || index.write(QJsonDocument(QJsonObject{{"weight_map", map}}).toJson()) <= 0)
            return false;
    }
    return true;
}

// How many calls of forEachAcrossCores' work the current thread has run (a thread made for one call starts at 0).
thread_local int64_t callsOnThisThread = 0;

// OpenBLAS's thread count, or 0 where the BLAS is not OpenBLAS.
int blasThreads()
{
    using GetThreads = int (*)();
    const auto get = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    return get ? get() : 0;
}

void setBlasThreads(int n)
{
    using SetThreads = void (*)(int);
    if (const auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
        set(n);
}

// The names of the nodes of out's autograd graph, each once.
std::multiset<std::string> graphNodes(const torch::Tensor& out)
{
    std::multiset<std::string> names;
    std::set<const torch::autograd::Node*> seen;
    std::vector<const torch::autograd::Node*> open{out.grad_fn().get()};
    while (!open.empty()) {
        const torch::autograd::Node* node = open.back();
        open.pop_back();
        if (!node || !seen.insert(node).second)
            continue;
        names.insert(node->name());
        for (const auto& edge : node->next_edges())
            open.push_back(edge.function.get());
    }
    return names;
}

std::vector<std::pair<std::string, torch::Tensor>> allTensors(const QString& family)
{
    const SafeTensors file = SafeTensors::open(fixture(family + "/model.safetensors"));
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const TensorInfo& t : file.tensors())
        out.emplace_back(t.name, toTorch(file, t));
    return out;
}

} // namespace

class TestMoe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The block against the rule written out token by token from the checkpoint's own tensors: each token's
    // top-k experts by the router's rule, each expert's SwiGLU, weighted, plus the shared expert.
    void blockEqualsTheTokenByTokenRule_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<int>("layer");
        QTest::newRow("qwen3.5 (shared expert with gate)") << "qwen35moe-tiny" << 3;
        QTest::newRow("glm (grouped sigmoid, bias, shared)") << "glm4vmoe-tiny" << 1;
        QTest::newRow("qwen3-vl (fused experts)") << "qwen3vlmoe-tiny" << 2;
    }
    void blockEqualsTheTokenByTokenRule()
    {
        QFETCH(QString, family);
        QFETCH(int, layer);
        const Checkpoint ck = Checkpoint::open(fixture(family));
        const TextConfig& t = ck.config().text;
        const MoeConfig& c = t.moe;
        const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
        const MoeWeights w = loadMoeWeights(ck, p, t, torch::kCPU, torch::kFloat32);
        torch::manual_seed(3);
        const int64_t n = 40, h = t.hidden, m = c.intermediate;
        const auto x = torch::randn({n, h});
        RouterTrace trace;
        const auto got = moeForward(x, w, c, &trace);

        // The expert weights straight from the file, in nn.Linear's [out, in] form.
        auto expert = [&](int64_t e) -> std::array<torch::Tensor, 3> {
            if (ck.has(p + "experts.0.gate_proj.weight")) {
                const std::string q = p + "experts." + std::to_string(e) + ".";
                return {ck.tensor(q + "gate_proj.weight", {m, h}), ck.tensor(q + "up_proj.weight", {m, h}),
                        ck.tensor(q + "down_proj.weight", {h, m})};
            }
            const auto gu = ck.tensor(p + "experts.gate_up_proj", {c.experts, 2 * m, h})[e]; // this fixture: transformers 5's form
            return {gu.narrow(0, 0, m), gu.narrow(0, m, m), ck.tensor(p + "experts.down_proj", {c.experts, h, m})[e]};
        };
        auto swiglu = [](const torch::Tensor& v, const torch::Tensor& g, const torch::Tensor& u, const torch::Tensor& d) {
            return torch::mv(d, torch::silu(torch::mv(g, v)) * torch::mv(u, v));
        };
        const auto router = ck.tensor(p + "gate.weight", {c.experts, h});
        for (int64_t i = 0; i < n; ++i) {
            const auto v = x[i];
            const auto logits = torch::mv(router, v);
            std::vector<int64_t> chosen;
            std::vector<double> weight;
            if (c.router == RouterKind::Softmax) {
                const auto probs = torch::softmax(logits, 0);
                const auto order = probs.argsort(0, /*descending=*/true);
                double sum = 0;
                for (int j = 0; j < c.topK; ++j) {
                    chosen.push_back(order[j].item<int64_t>());
                    weight.push_back(probs[chosen.back()].item<double>());
                    sum += weight.back();
                }
                for (double& wj : weight)
                    wj /= sum;
            } else {
                // Groups scored by their two best biased scores; the best group only (topk_group 1 here).
                const auto scores = torch::sigmoid(logits), biased = scores + ck.tensor(p + "gate.e_score_correction_bias", {c.experts});
                const int64_t per = c.experts / c.groups;
                int64_t bestGroup = 0;
                double bestScore = -1e30;
                for (int64_t g = 0; g < c.groups; ++g) {
                    const auto top2 = std::get<0>(biased.narrow(0, g * per, per).topk(2));
                    if (top2.sum().item<double>() > bestScore) {
                        bestScore = top2.sum().item<double>();
                        bestGroup = g;
                    }
                }
                const auto inGroup = biased.narrow(0, bestGroup * per, per).argsort(0, true);
                double sum = 0;
                for (int j = 0; j < c.topK; ++j) {
                    chosen.push_back(bestGroup * per + inGroup[j].item<int64_t>());
                    weight.push_back(scores[chosen.back()].item<double>());
                    sum += weight.back();
                }
                std::vector<size_t> byId(chosen.size());
                std::iota(byId.begin(), byId.end(), 0);
                std::sort(byId.begin(), byId.end(), [&](size_t a, size_t b) { return chosen[a] < chosen[b]; });
                std::vector<int64_t> ids;
                std::vector<double> ws;
                for (size_t j : byId) {
                    ids.push_back(chosen[j]);
                    ws.push_back(weight[j] / sum * c.routedScaling);
                }
                chosen = ids;
                weight = ws;
            }
            auto want = torch::zeros({h});
            for (size_t j = 0; j < chosen.size(); ++j) {
                QCOMPARE(trace.experts[i][static_cast<int64_t>(j)].item<int64_t>(), chosen[j]);
                QVERIFY(std::abs(trace.weights[i][static_cast<int64_t>(j)].item<double>() - weight[j]) < 1e-6);
                const auto [g, u, d] = expert(chosen[j]);
                want += weight[j] * swiglu(v, g, u, d);
            }
            if (c.sharedIntermediate > 0) {
                const int64_t s = c.sharedIntermediate;
                const std::string q = p + c.names.sharedExpert; // the family's row names it
                auto shared = swiglu(v, ck.tensor(q + "gate_proj.weight", {s, h}), ck.tensor(q + "up_proj.weight", {s, h}),
                                     ck.tensor(q + "down_proj.weight", {h, s}));
                if (c.sharedExpertGate)
                    shared = shared * torch::sigmoid(torch::mv(ck.tensor(p + "shared_expert_gate.weight", {1, h}), v));
                want += shared;
            }
            QVERIFY2(ropescope::test::maxAbs(got[i], want) < 1e-5,
                     qPrintable(QString("token %1: %2").arg(i).arg(ropescope::test::maxAbs(got[i], want))));
        }
    }

    // A token's output is its own k slots summed in ascending expert id, plus its shared expert's row, so it does
    // not depend on which core ran which expert: a repeated call, whose items fall to the cores differently, gives
    // the same bits. (Fixed groups of experts per core, each adding into its own sum, had made the sums depend on the
    // core count.) One core against two, and tokens split into other passes (across the 4,096-token one), agree to
    // float rounding: LibTorch 2.6's element-wise operations round the vector tail of each thread's share of a
    // tensor on another path, so the router's sigmoid of a token can differ in its last bit with the tensor's length
    // and the thread count.
    void blockIsTheSameOnAnyCoresAndInAnyPass_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<int>("layer");
        QTest::newRow("qwen3.5 (shared expert with gate)") << "qwen35moe-tiny" << 3;
        QTest::newRow("glm (shared expert, no gate)") << "glm4vmoe-tiny" << 1;
    }
    void blockIsTheSameOnAnyCoresAndInAnyPass()
    {
        QFETCH(QString, family);
        QFETCH(int, layer);
        const Checkpoint ck = Checkpoint::open(fixture(family));
        const TextConfig& t = ck.config().text;
        const MoeWeights w = loadMoeWeights(ck, "model.layers." + std::to_string(layer) + ".mlp.", t, torch::kCPU, torch::kFloat32);
        torch::manual_seed(9);
        const auto x = torch::randn({4100, t.hidden});
        const torch::NoGradGuard noGrad;
        const auto all = moeForward(x, w, t.moe);
        QVERIFY(torch::equal(all, moeForward(x, w, t.moe)));
        const auto pieces = torch::cat({moeForward(x.narrow(0, 0, 1500), w, t.moe), moeForward(x.narrow(0, 1500, 2600), w, t.moe)});
        const double scale = std::max(1.0, all.abs().max().item<double>());
        auto agrees = [&](const torch::Tensor& other) { return ropescope::test::maxAbs(other, all) < 1e-6 * scale; };
        QVERIFY2(agrees(pieces), qPrintable(QString::number(ropescope::test::maxAbs(pieces, all))));
        // One core: LibTorch's and OpenBLAS's threads at one, as they were afterwards.
        const int threads = at::get_num_threads();
        using SetThreads = void (*)(int);
        using GetThreads = int (*)();
        const auto setBlas = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
        const auto getBlas = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
        const int blasThreads = getBlas ? getBlas() : 1;
        at::set_num_threads(1);
        if (setBlas)
            setBlas(1);
        // (LibTorch's native thread pool keeps its size once it has run, and says so: then this part cannot run.)
        const bool oneWorker = cpuWorkers() == 1;
        const auto oneCore = moeForward(x, w, t.moe);
        at::set_num_threads(threads);
        if (setBlas)
            setBlas(blasThreads);
        if (!oneWorker)
            QSKIP("this LibTorch cannot run on one thread here after it ran on more");
        QVERIFY2(agrees(oneCore), qPrintable(QString::number(ropescope::test::maxAbs(oneCore, all))));
    }

    // A layer's experts in either state give one block: loaded as the checkpoint holds them (what a GPU, or a CPU
    // without the few-rows kernel, runs: here in float64) in both orientations (per expert and transformers 5's
    // fused form output-major; the Hub's fused form input-major), and packed into panels (float32 on a CPU that
    // runs the kernel); the shared expert, where the config has one, in the same state as the experts.
    void loadedAndPackedExpertsGiveOneBlock_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<int>("layer");
        QTest::addColumn<bool>("hubForm");
        QTest::newRow("qwen3.5 (per expert, gated shared expert)") << "qwen35moe-tiny" << 3 << false;
        QTest::newRow("glm (per expert, shared expert)") << "glm4vmoe-tiny" << 1 << false;
        QTest::newRow("qwen3-vl (transformers 5's fused form)") << "qwen3vlmoe-tiny" << 2 << false;
        QTest::newRow("qwen3-vl (the Hub's fused form)") << "qwen3vlmoe-tiny" << 2 << true;
    }
    void loadedAndPackedExpertsGiveOneBlock()
    {
        QFETCH(QString, family);
        QFETCH(int, layer);
        QFETCH(bool, hubForm);
        QTemporaryDir dir;
        QString folder = fixture(family);
        if (hubForm) {
            std::vector<std::pair<std::string, torch::Tensor>> hub;
            for (const auto& [name, t] : allTensors(family)) {
                const bool fused =
                    name.find("experts.gate_up_proj") != std::string::npos || name.find("experts.down_proj") != std::string::npos;
                hub.emplace_back(name, fused ? t.transpose(1, 2) : t);
            }
            QVERIFY(writeFolder(dir.path(), family, hub));
            folder = dir.path();
        }
        const Checkpoint ck = Checkpoint::open(folder);
        const TextConfig& t = ck.config().text;
        const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
        const MoeWeights loaded = loadMoeWeights(ck, p, t, torch::kCPU, torch::kFloat64);
        QVERIFY(!loaded.packed());
        QCOMPARE(std::get<LoadedExperts>(loaded.experts).experts.size(), size_t(t.moe.experts));
        QVERIFY(std::get<LoadedExperts>(loaded.experts).orientation == (hubForm ? Orientation::InputMajor : Orientation::OutputMajor));
        QCOMPARE(loaded.shared.has_value(), t.moe.sharedIntermediate > 0);
        QVERIFY(!loaded.shared || std::holds_alternative<LoadedMlp>(loaded.shared->mlp));
        QCOMPARE(loaded.shared && loaded.shared->gate.defined(), t.moe.sharedExpertGate);
        torch::manual_seed(13);
        const auto x = torch::randn({50, t.hidden});
        const torch::NoGradGuard noGrad;
        const auto want = moeForward(x.to(torch::kFloat64), loaded, t.moe);
        const double scale = std::max(1.0, want.abs().max().item<double>());
        if (!kernels::linearFewRowsAvailable())
            QSKIP("this CPU has no AVX2 and FMA: the experts are never packed here");
        const MoeWeights packed = loadMoeWeights(ck, p, t, torch::kCPU, torch::kFloat32);
        QVERIFY(packed.packed());
        QCOMPARE(std::get<PackedExperts>(packed.experts).experts.size(), size_t(t.moe.experts));
        QVERIFY(!packed.shared || std::holds_alternative<PackedMlp>(packed.shared->mlp));
        const auto got = moeForward(x, packed, t.moe);
        QVERIFY2(ropescope::test::maxAbs(got, want) < 1e-5 * scale, qPrintable(QString::number(ropescope::test::maxAbs(got, want))));
    }

    // Relevancy differentiates through the block (where a graph records, the experts run as a GPU runs them): the gradient reaching the
    // tokens equals the gradient of the rule written token by token (the router's renormalised softmax weights
    // and each chosen expert's SwiGLU, plus the gated shared expert), the choice of experts held fixed.
    void gradientThroughTheBlockEqualsTheRulesGradient()
    {
        const Checkpoint ck = Checkpoint::open(fixture("qwen35moe-tiny"));
        const TextConfig& t = ck.config().text;
        const MoeConfig& c = t.moe;
        const std::string p = "model.layers.3.mlp.";
        const MoeWeights w = loadMoeWeights(ck, p, t, torch::kCPU, torch::kFloat32);
        torch::manual_seed(5);
        const int64_t n = 40, h = t.hidden, m = c.intermediate, s = c.sharedIntermediate;
        const auto x = torch::randn({n, h}).requires_grad_(), probe = torch::randn({n, h});
        RouterTrace trace;
        const auto got = torch::autograd::grad({(moeForward(x, w, c, &trace) * probe).sum()}, {x})[0];

        const auto y = x.detach().clone().requires_grad_();
        auto swiglu = [](const torch::Tensor& v, const torch::Tensor& g, const torch::Tensor& u, const torch::Tensor& d) {
            return torch::mv(d, torch::silu(torch::mv(g, v)) * torch::mv(u, v));
        };
        const auto router = ck.tensor(p + "gate.weight", {c.experts, h});
        const std::string q = p + "shared_expert.";
        std::vector<torch::Tensor> rows;
        for (int64_t i = 0; i < n; ++i) {
            const auto v = y[i];
            const auto chosen = trace.experts[i];
            const auto picked = torch::softmax(torch::mv(router, v), 0).index_select(0, chosen);
            const auto weights = picked / picked.sum();
            auto row = swiglu(v, ck.tensor(q + "gate_proj.weight", {s, h}), ck.tensor(q + "up_proj.weight", {s, h}),
                              ck.tensor(q + "down_proj.weight", {h, s})) *
                torch::sigmoid(torch::mv(ck.tensor(p + "shared_expert_gate.weight", {1, h}), v));
            for (int64_t j = 0; j < c.topK; ++j) {
                const std::string e = p + "experts." + std::to_string(chosen[j].item<int64_t>()) + ".";
                row = row +
                    weights[j] *
                        swiglu(v, ck.tensor(e + "gate_proj.weight", {m, h}), ck.tensor(e + "up_proj.weight", {m, h}),
                               ck.tensor(e + "down_proj.weight", {h, m}));
            }
            rows.push_back(row);
        }
        const auto want = torch::autograd::grad({(torch::stack(rows) * probe).sum()}, {y})[0];
        QVERIFY2(ropescope::test::maxAbs(got, want) < 1e-5, qPrintable(QString::number(ropescope::test::maxAbs(got, want))));
        QVERIFY(want.abs().max().item<double>() > 1e-2); // a gradient that says something
    }

    // The experts run on every core; one that fails stops the block with its own error, and no call is lost or
    // made twice when none fails.
    void workAcrossCoresRunsEachCallOnceAndRethrows()
    {
        std::vector<std::atomic<int>> calls(1000);
        forEachAcrossCores(1000, [&](int64_t i) { ++calls[static_cast<size_t>(i)]; });
        QVERIFY(std::all_of(calls.begin(), calls.end(), [](const std::atomic<int>& n) { return n == 1; }));
        QVERIFY_EXCEPTION_THROWN(forEachAcrossCores(1000,
                                                    [](int64_t i) {
                                                        if (i == 37)
                                                            throw std::runtime_error("expert 37");
                                                    }),
                                 std::runtime_error);
    }

    // The calls run on one pool of threads kept for the process (forEachAcrossCores made new threads on every
    // call): a thread that runs calls of a second job has run calls of the first. The first `workers` calls of
    // each job wait until that many threads hold one, so that every thread of the pool takes part in both.
    void workersAreKeptFromOneCallToTheNext()
    {
        const int64_t workers = cpuWorkers();
        if (workers < 2)
            QSKIP("one worker here: forEachAcrossCores runs serially");
        std::mutex m;
        std::vector<int64_t> before; // each call's count of calls its thread had run
        for (int job = 0; job < 2; ++job) {
            std::atomic<int64_t> arrived{0};
            forEachAcrossCores(64, [&](int64_t i) {
                {
                    const std::lock_guard<std::mutex> lock(m);
                    if (job == 1)
                        before.push_back(callsOnThisThread);
                }
                ++callsOnThisThread;
                if (i < workers) {
                    ++arrived;
                    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                    while (arrived < workers && std::chrono::steady_clock::now() < until)
                        std::this_thread::yield();
                }
            });
        }
        QCOMPARE(static_cast<int64_t>(before.size()), int64_t(64));
        QVERIFY2(*std::min_element(before.begin(), before.end()) > 0, "a call of the second job ran on a thread new to it");
    }

    // A worker's own LibTorch operations run on that worker, not on a team of every core started from each worker
    // (the workers were outside any parallel region, so LibTorch's OpenMP gave each of them a team of its own): the
    // OpenMP team a worker's LibTorch operation splits over is one thread, also after LibTorch's first parallel
    // loop on the thread (which sets the thread's team size).
    void libTorchInsideAWorkerStaysOnIt()
    {
        using GetThreads = int (*)();
        const auto ompMaxThreads = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
        if (!ompMaxThreads || at::get_parallel_info().find("OpenMP") == std::string::npos)
            QSKIP("LibTorch's parallel backend here is not OpenMP");
        const int threads = at::get_num_threads();
        if (threads < 2)
            at::set_num_threads(2); // else LibTorch runs on one thread anyway
        if (cpuWorkers() < 2) {
            at::set_num_threads(threads);
            QSKIP("one worker here: forEachAcrossCores runs serially");
        }
        std::atomic<int> team{0};
        forEachAcrossCores(16, [&](int64_t) {
            (void)torch::softmax(torch::ones({64, 1024}), 1); // a parallel loop inside LibTorch
            team = std::max(team.load(), ompMaxThreads());
        });
        at::set_num_threads(threads);
        QCOMPARE(team.load(), 1);
    }

    // Two callers at once: OpenBLAS stays at one thread under every call of both, and is as it was afterwards.
    // Caller A's job is in flight when caller B calls; A's calls wait (at most 300 ms) for B's first call to start,
    // and B's calls look at OpenBLAS after A has returned. Each caller had saved and restored the count on its own,
    // so A restored two threads under B's calls; one job at a time, B's calls start after A's job has ended.
    void blasIsSingleThreadedUnderTwoCallersAtOnce()
    {
        const int saved = blasThreads();
        if (saved == 0)
            QSKIP("the BLAS behind libblas.so.3 is not OpenBLAS");
        setBlasThreads(2);
        const int threads = at::get_num_threads();
        at::set_num_threads(2); // both callers go to the cores whatever OpenBLAS's count is when they look
        auto waitFor = [](const std::atomic<bool>& flag, std::chrono::milliseconds most) {
            const auto until = std::chrono::steady_clock::now() + most;
            while (!flag && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(std::chrono::microseconds(100));
        };
        std::atomic<bool> aInside{false}, bStarted{false}, aReturned{false};
        std::atomic<int> underB{0};
        std::thread a([&] {
            forEachAcrossCores(2, [&](int64_t) {
                aInside = true;
                waitFor(bStarted, std::chrono::milliseconds(300));
            });
            aReturned = true;
        });
        waitFor(aInside, std::chrono::seconds(10));
        std::thread b([&] {
            forEachAcrossCores(2, [&](int64_t) {
                bStarted = true;
                waitFor(aReturned, std::chrono::seconds(10));
                underB = std::max(underB.load(), blasThreads());
            });
        });
        a.join();
        b.join();
        const int after = blasThreads();
        setBlasThreads(saved);
        at::set_num_threads(threads);
        QVERIFY(aInside && aReturned && bStarted);
        QCOMPARE(underB.load(), 1);
        QCOMPARE(after, 2);
    }

    // The slot outputs' storage goes with the model: a window's thread that ran a forward (and lives on) keeps
    // nothing of it after the model is gone (the storage was the running thread's own, until the thread ended).
    void slotStorageGoesWithTheModel()
    {
        const int64_t before = kernels::fewRowsStorageBytes();
        int64_t during = 0, after = 0;
        std::thread window([&] {
            {
                Vlm vlm(fixture("qwen35moe-tiny"));
                vlm.run(imageRequest("qwen35moe-tiny"));
                during = kernels::fewRowsStorageBytes();
            }
            after = kernels::fewRowsStorageBytes();
        });
        window.join();
        QVERIFY2(during > before, qPrintable(QString("%1 -> %2").arg(before).arg(during)));
        QCOMPARE(after, before);
    }

    // GLM's router drops the groups outside the best topk_group with -inf, as transformers 5's Glm4vMoe router
    // does (a fill of 0 let a dropped group's expert, at 0, beat a kept one whose biased score is negative).
    // Hand-derived: one hidden unit, x = +1 and -1, logits ln 9, 0, ln 1.5, ln(2/3) give sigmoid scores 0.9, 0.5,
    // 0.6, 0.4 (and 0.1, 0.5, 0.4, 0.6 for x = -1); the bias 1, -0.7, 0, 0. Token 0: biased 1.9, -0.2 | 0.6, 0.4,
    // groups 1.7 and 1.0, so experts 0 and 1 (expert 1 at -0.2), weights 0.9 and 0.5 over 1.4, times 2.5. Token 1:
    // biased 1.1, -0.2 | 0.4, 0.6, groups 0.9 and 1.0, so experts 2 and 3, weights 0.4 and 0.6 times 2.5.
    void glmDroppedGroupsLoseToNegativeKeptScores()
    {
        MoeConfig c;
        c.router = RouterKind::SigmoidGrouped;
        c.experts = 4;
        c.topK = 2;
        c.groups = 2;
        c.topkGroup = 1;
        c.normTopK = true;
        c.routedScaling = 2.5;
        MoeWeights w;
        w.router = torch::tensor({std::log(9.0), 0.0, std::log(1.5), std::log(2.0 / 3.0)}, torch::kFloat32).view({4, 1});
        w.correctionBias = torch::tensor({1.0, -0.7, 0.0, 0.0}, torch::kFloat32);
        const RouterTrace r = routeTokens(torch::tensor({1.0, -1.0}, torch::kFloat32).view({2, 1}), w, c);
        QCOMPARE(r.experts[0][0].item<int64_t>(), int64_t(0));
        QCOMPARE(r.experts[0][1].item<int64_t>(), int64_t(1));
        QCOMPARE(r.experts[1][0].item<int64_t>(), int64_t(2));
        QCOMPARE(r.experts[1][1].item<int64_t>(), int64_t(3));
        const double want[2][2] = {{0.9 / 1.4 * 2.5, 0.5 / 1.4 * 2.5}, {1.0, 1.5}};
        for (int t = 0; t < 2; ++t)
            for (int j = 0; j < 2; ++j)
                QVERIFY2(std::abs(r.weights[t][j].item<double>() - want[t][j]) < 1e-6,
                         qPrintable(QString("token %1 choice %2: %3").arg(t).arg(j).arg(r.weights[t][j].item<double>())));
    }

    // n_shared_experts x moe_intermediate_size is taken in 64 bits and refused past 2^30 in one line naming the key
    // (1024 x 2^22 overflowed an int: the shared expert read as none, and 3 x 2^30 as a negative width).
    void sharedExpertWidthPastAnIntIsRefused()
    {
        for (const int sharedExperts : {1024, 3}) {
            QJsonObject root = QJsonDocument::fromJson(configOf("glm4vmoe-tiny")).object(), text = root["text_config"].toObject();
            text["n_shared_experts"] = sharedExperts;
            text["moe_intermediate_size"] = sharedExperts == 1024 ? (1 << 22) : (1 << 30);
            root["text_config"] = text;
            const QString m = refusal(QJsonDocument(root).toJson());
            QVERIFY2(m.startsWith("m/config.json: text_config.n_shared_experts " + QString::number(sharedExperts) +
                                  " x moe_intermediate_size") &&
                         m.contains("wider than 2^30") && !m.contains('\n'),
                     qPrintable(m));
        }
        // At the bound it loads: 2 x 2^29.
        QJsonObject root = QJsonDocument::fromJson(configOf("glm4vmoe-tiny")).object(), text = root["text_config"].toObject();
        text["n_shared_experts"] = 2;
        text["moe_intermediate_size"] = 1 << 29;
        root["text_config"] = text;
        QCOMPARE(parseModelConfig(QJsonDocument(root).toJson(), "m/config.json").text.moe.sharedIntermediate, 1 << 30);
    }

    // OpenBLAS runs kernels this CPU's vectors are made for, never its fallback for a CPU it does not know
    // (Debian 12's OpenBLAS took a 2-core Emerald Rapids for a Prescott: dense GEMMs 5-7x slower). The product
    // it gives with the kernels chosen still equals the float64 one.
    void openBlasRunsKernelsForThisCpu()
    {
        const auto& k = model::blasKernels();
        if (k.core.empty())
            QSKIP("the BLAS behind libblas.so.3 is not OpenBLAS");
        if (!__builtin_cpu_supports("avx2"))
            QSKIP("this CPU has no AVX2: OpenBLAS's own choice stands");
        QVERIFY2(k.core != "Prescott", "OpenBLAS runs its Prescott (SSE3) fallback on a CPU with AVX2");
        if (!k.replaced.empty())
            QCOMPARE(QString::fromStdString(k.core),
                     QString(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? "SkylakeX" : "Haswell"));
        torch::manual_seed(3);
        const auto x = torch::randn({300, 512}), w = torch::randn({700, 512});
        const auto want = torch::nn::functional::linear(x.to(torch::kDouble), w.to(torch::kDouble));
        QVERIFY(ropescope::test::maxAbs(torch::nn::functional::linear(x, w).to(torch::kDouble), want) < 1e-5 * std::sqrt(512.0));
    }

    // The experts' few-rows product against the same product in float64, with every instruction set this CPU
    // runs (AVX2's tile of 4 rows x 24 outputs, AVX-512's of 8 x 48): row remainders (past a multiple of 4 and of
    // 8), output remainders (past a multiple of 24 and of the 48-wide panel), K past one 64-long chunk of sums,
    // more rows than one 64-row block, a weight that is a view into a fused tensor (row stride past its width, and
    // transposed as the Hub stores qwen3_vl_moe), rows gathered by index, products weighted and written in place
    // into rows of a larger tensor, and the LibTorch fallbacks.
    void fewRowsProductEqualsTheDoubleProduct()
    {
        if (!kernels::linearFewRowsAvailable())
            QSKIP("this CPU has no AVX2 and FMA: LibTorch runs instead");
        torch::manual_seed(7);
        const std::vector<std::array<int64_t, 3>> shapes{
            {1, 1, 1},  {2, 5, 9},     {3, 4, 8},   {31, 1024, 2048}, {7, 13, 1029}, {40, 50, 2051}, {17, 2048, 512}, {0, 4, 16},
            {5, 7, 17}, {9, 11, 1040}, {8, 48, 16}, {0, 100, 16},     {3, 0, 16},    {130, 97, 64},  {4, 24, 0},      {12, 25, 513}};
        auto check = [](const torch::Tensor& got, const torch::Tensor& want, int64_t k, const QString& what) {
            QCOMPARE(got.sizes(), want.sizes());
            const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))); // entries are sums of k unit products
            const double err = want.numel() == 0 ? 0.0 : ropescope::test::maxAbs(got.to(torch::kDouble), want);
            QVERIFY2(err < 1e-5 * scale, qPrintable(QString("%1: %2").arg(what).arg(err)));
        };
        for (const auto isa : kernels::linearFewRowsIsas()) {
            const QString name = QString::fromStdString(kernels::linearFewRowsName(isa));
            for (const auto& [m, n, k] : shapes) {
                const QString what = QString("%1 %2x%3x%4").arg(name).arg(m).arg(n).arg(k);
                const auto x = torch::randn({m, k});
                const auto fused = torch::randn({2, 2 * n, k}); // expert 1's second half, as the fused layouts give
                const auto w = fused.select(0, 1).narrow(0, n, n);
                const auto packed = kernels::packFewRowsWeight(w);
                QVERIFY(torch::equal(kernels::unpackFewRowsWeight(packed), w));
                const auto want = torch::nn::functional::linear(x.to(torch::kDouble), w.to(torch::kDouble));
                check(kernels::linearFewRows(x, packed, {}, isa), want, k, what);
                // The Hub's input-major form, packed from its transposed view, gives the same panels.
                QVERIFY(torch::equal(kernels::packFewRowsWeight(w.t().contiguous().t()).panels, packed.panels));
                // Packed into a slice of shared storage (as a layer's experts are): the same panels, in place.
                const int64_t floats = kernels::fewRowsPanelFloats(n, k);
                const auto slice = kernels::fewRowsStorage(floats + 7).narrow(0, 7, floats);
                const auto placed = kernels::packFewRowsWeight(w, slice);
                QVERIFY(torch::equal(placed.panels, packed.panels) && placed.panels.data_ptr() == slice.data_ptr());
                if (m == 0)
                    continue;
                const auto rows = torch::randint(m, {m + 3}, torch::kLong);
                check(kernels::linearFewRows(x, packed, rows, isa), want.index_select(0, rows), k, what + " gathered");
                // Weighted and written in place into rows of a larger tensor, as the MoE block writes an expert's
                // slots; the rows around them are left as they were.
                const auto block = torch::randn({m + 5, n}), scale = torch::randn({m});
                const auto before = block.clone();
                kernels::linearFewRowsInto(x, packed, block.narrow(0, 2, m), scale, isa);
                check(block.narrow(0, 2, m), want * scale.to(torch::kDouble).unsqueeze(1), k, what + " weighted");
                QVERIFY(torch::equal(block.narrow(0, 0, 2), before.narrow(0, 0, 2)) &&
                        torch::equal(block.narrow(0, m + 2, 3), before.narrow(0, m + 2, 3)));
                kernels::linearFewRowsInto(x, packed, block.narrow(0, 1, m), {}, isa);
                check(block.narrow(0, 1, m), want, k, what + " into");
            }
        }
        // A non-float x and a graph to record give LibTorch's answer, from the same panels.
        const auto w = torch::randn({8, 40});
        const auto packed = kernels::packFewRowsWeight(w);
        const auto wide = torch::randn({5, 40}, torch::kDouble);
        QVERIFY(torch::allclose(kernels::linearFewRows(wide, packed), torch::nn::functional::linear(wide, w.to(torch::kDouble))));
        const auto leaf = torch::randn({5, 40}).requires_grad_();
        const auto out = kernels::linearFewRows(leaf, packed);
        QVERIFY(out.requires_grad());
        out.sum().backward();
        QVERIFY(torch::allclose(leaf.grad(), w.sum(0).expand({5, 40})));
        // Storage of the wrong size is refused, not written past.
        QVERIFY_THROWS_EXCEPTION(c10::Error,
                                 kernels::packFewRowsWeight(w, kernels::fewRowsStorage(kernels::fewRowsPanelFloats(8, 40) - 1)));
        // A row index outside x, or a destination of the wrong size, is an error, not a read or write past it.
        QVERIFY_THROWS_EXCEPTION(c10::Error, kernels::linearFewRows(torch::randn({3, 40}), packed, torch::tensor({0, 3}, torch::kLong)));
        QVERIFY_THROWS_EXCEPTION(c10::Error,
                                 kernels::linearFewRowsInto(torch::randn({3, 40}), packed, torch::zeros({2, 8}), torch::ones({3})));
        QVERIFY_THROWS_EXCEPTION(c10::Error,
                                 kernels::linearFewRowsInto(torch::randn({2, 40}), packed, torch::zeros({2, 8}), torch::ones({3})));
    }

    // With a graph to record (relevancy), the LibTorch product on the panels is a 2-D product per panel on x itself:
    // no batched product over copies of x (matmul of [1, M, K] by [P, K, 48] copied x once per panel into the graph).
    // Its value and gradient are at::linear's.
    void fewRowsFallbackRecordsNoCopiesOfX()
    {
        torch::manual_seed(11);
        const auto w = torch::randn({200, 64}); // 5 panels, the last one partly padding
        const auto packed = kernels::packFewRowsWeight(w);
        const auto x = torch::randn({7, 64}).requires_grad_();
        const auto out = kernels::linearFewRows(x, packed);
        const auto nodes = graphNodes(out);
        QString names;
        for (const auto& n : nodes)
            names += QString::fromStdString(n) + " ";
        QVERIFY2(nodes.count("MmBackward0") == 5, qPrintable(names));
        for (const auto& n : nodes)
            QVERIFY2(n.find("Bmm") == std::string::npos && n.find("Expand") == std::string::npos, qPrintable(names));
        const auto y = x.detach().clone().requires_grad_();
        const auto want = torch::nn::functional::linear(y, w);
        QVERIFY(ropescope::test::maxAbs(out, want) < 1e-5);
        const auto probe = torch::randn({7, 200});
        (out * probe).sum().backward();
        (want * probe).sum().backward();
        QVERIFY(ropescope::test::maxAbs(x.grad(), y.grad()) < 1e-4);
    }

    // qwen3_vl_moe's experts as the Hub stores them ([E, hidden, 2I], [E, I, hidden]), as transformers 5 holds
    // them (the fixture's form), one tensor per expert, and in two shards: the same logits and routing.
    void expertLayoutsGiveOneModel()
    {
        const QString family = "qwen3vlmoe-tiny";
        const auto tensors = allTensors(family);
        std::vector<std::pair<std::string, torch::Tensor>> hub, perExpert;
        for (const auto& [name, t] : tensors) {
            auto endsWith = [&, n = name](const std::string& tail) {
                return n.size() > tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
            };
            const bool gateUp = endsWith("experts.gate_up_proj"), down = endsWith("experts.down_proj");
            if (!gateUp && !down) {
                hub.emplace_back(name, t);
                perExpert.emplace_back(name, t);
                continue;
            }
            hub.emplace_back(name, t.transpose(1, 2));
            const std::string prefix = name.substr(0, name.size() - (gateUp ? 12 : 9)); // "...mlp.experts."
            for (int64_t e = 0; e < t.size(0); ++e) {
                const std::string q = prefix + std::to_string(e) + ".";
                if (gateUp) {
                    const int64_t m = t.size(1) / 2;
                    perExpert.emplace_back(q + "gate_proj.weight", t[e].narrow(0, 0, m));
                    perExpert.emplace_back(q + "up_proj.weight", t[e].narrow(0, m, m));
                } else {
                    perExpert.emplace_back(q + "down_proj.weight", t[e]);
                }
            }
        }
        QVERIFY(hub.size() == tensors.size() && perExpert.size() > tensors.size());
        QTemporaryDir a, b, c;
        QVERIFY(writeFolder(a.path(), family, hub) && writeFolder(b.path(), family, perExpert) && writeFolder(c.path(), family, hub, 3));
        const ForwardRequest req = imageRequest(family);
        const ForwardResult want = Vlm(fixture(family)).run(req);
        for (const QString& dir : {a.path(), b.path(), c.path()}) {
            const ForwardResult got = Vlm(dir).run(req);
            EXPECT_CLOSE(got.prefill.logits, want.prefill.logits, 1e-5, dir);
            for (size_t l = 0; l < want.prefill.routers.size(); ++l)
                QVERIFY(torch::equal(got.prefill.routers[l].experts, want.prefill.routers[l].experts));
        }
    }

    // Expert usage from a run against the same counts made with plain loops over the fixture's own router
    // tensors (transformers' choices and weights) and its input ids.
    void expertUsageMatchesTheFixturesRouters_data()
    {
        QTest::addColumn<QString>("family");
        for (const char* f : {"qwen35moe-tiny", "qwen3vlmoe-tiny", "glm4vmoe-tiny"})
            QTest::newRow(f) << QString(f);
    }
    void expertUsageMatchesTheFixturesRouters()
    {
        QFETCH(QString, family);
        Vlm vlm(fixture(family));
        const ModelConfig& cfg = vlm.config();
        const ForwardRequest req = imageRequest(family);
        const ForwardResult r = vlm.run(req);
        const auto ids = req.inputIds.contiguous();
        std::vector<bool> visual;
        for (int64_t i = 0; i < ids.numel(); ++i)
            visual.push_back(ids[i].item<int64_t>() == cfg.imageToken || ids[i].item<int64_t>() == cfg.videoToken);
        const ExpertUsage u = expertUsage(r.prefill.routers, visual, cfg.text.moe.experts);

        const SafeTensors expected = SafeTensors::open(fixture(family + "/expected.safetensors"));
        const auto experts = toTorch(expected, "moe_router_experts"), weights = toTorch(expected, "moe_router_weights");
        QCOMPARE(static_cast<int64_t>(u.layers.size()), experts.size(0));
        const int64_t L = experts.size(1), k = experts.size(2), images = std::count(visual.begin(), visual.end(), true);
        QVERIFY(images > 0 && images < L);
        QCOMPARE(u.imageTokens, images);
        double worst = 0;
        for (int64_t layer = 0; layer < experts.size(0); ++layer)
            for (int64_t e = 0; e < cfg.text.moe.experts; ++e) {
                double count[2] = {0, 0}, weight[2] = {0, 0};
                for (int64_t t = 0; t < L; ++t)
                    for (int64_t j = 0; j < k; ++j)
                        if (experts[layer][t][j].item<int64_t>() == e) {
                            const int kind = visual[static_cast<size_t>(t)] ? 0 : 1;
                            count[kind] += 1;
                            weight[kind] += weights[layer][t][j].item<double>();
                        }
                const size_t l = static_cast<size_t>(layer), x = static_cast<size_t>(e);
                QCOMPARE(u.imageShare[l][x], count[0] / static_cast<double>(images));
                QCOMPARE(u.textShare[l][x], count[1] / static_cast<double>(L - images));
                worst = std::max({worst, std::abs(u.imageWeight[l][x] - (count[0] > 0 ? weight[0] / count[0] : 0)),
                                  std::abs(u.textWeight[l][x] - (count[1] > 0 ? weight[1] / count[1] : 0))});
            }
        // The parity harness's bound on Qwen3.5's outputs, routers included (3e-4): LibTorch 2.6's fused attention reaches the
        // routers through several float32 layers and lands 1e-5 off transformers' weights where 1.13 does not.
        QVERIFY2(worst < 3e-4, qPrintable(QString("mean router weight off by %1").arg(worst)));
    }

    // An expert tensor of the wrong shape, or a missing one, is named in one line.
    void missingOrMisshapenExpertsAreNamed()
    {
        auto tensors = allTensors("qwen35moe-tiny");
        QTemporaryDir dir;
        std::vector<std::pair<std::string, torch::Tensor>> without;
        for (const auto& [name, t] : tensors)
            if (name != "model.language_model.layers.2.mlp.experts.5.up_proj.weight")
                without.emplace_back(name, t);
        QVERIFY(writeFolder(dir.path(), "qwen35moe-tiny", without));
        try {
            Vlm vlm(dir.path());
            QFAIL("loaded without an expert");
        } catch (const BadInputFile& e) {
            QVERIFY2(QString(e.what()).contains("missing tensor 'model.layers.2.mlp.experts.5.up_proj.weight'"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestMoe)
#include "test_moe.moc"

// The engine's projections (dense) on AMX's tiles against the product in float64: exact to fp32 where the weight
// holds bf16 values (the activations split in three bf16 parts), over every edge of the kernel's blocking (rows and
// inputs not multiples of 32, inputs over one 1,024-input block, a bias, batched rows); the weights it must leave to
// OpenBLAS; a weight written in place packed again; inference-mode weights; autograd's products left to LibTorch.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "core/model/engine/amx_gemm.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/dense.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/functional/linear.h>
#include <torch/types.h>

#include <algorithm>
#include <limits>
#include <map>
#include <thread>
#include <vector>
#endif

using namespace ropescope::model;

namespace {

torch::Tensor bf16Valued(torch::Tensor t)
{
    return t.to(torch::kBFloat16).to(torch::kFloat32);
}

// The largest error of y against x w^T + b in float64, in units of fp32's rounding of the sum of |x_k w_k| a
// output (what any order of fp32 additions may lose is a small multiple of it times K).
double errorInUlps(const torch::Tensor& y, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    const auto xd = x.to(torch::kFloat64), wd = w.to(torch::kFloat64);
    auto ref = torch::matmul(xd, wd.t());
    if (b.defined())
        ref = ref + b.to(torch::kFloat64);
    const auto scale = torch::matmul(xd.abs(), wd.abs().t()) + 1e-30;
    return ((y.to(torch::kFloat64) - ref).abs() / scale).max().item<double>() / std::ldexp(1.0, -24);
}

// Every thread of this process: its time on a CPU so far, in nanoseconds (/proc/self/task/T/schedstat).
std::map<int64_t, int64_t> threadCpuNanoseconds()
{
    std::map<int64_t, int64_t> ns;
    for (const QString& tid : QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile stat("/proc/self/task/" + tid + "/schedstat");
        if (stat.open(QIODevice::ReadOnly))
            ns[tid.toLongLong()] = QString::fromLatin1(stat.readAll()).split(' ').value(0).toLongLong();
    }
    return ns;
}

} // namespace

class TestDense : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init()
    {
        if (!amx::available() && QTest::currentTestFunction() != QLatin1String("oneRowAsMatrixVector"))
            QSKIP("this CPU has no AMX-BF16 (or ROPESCOPE_AMX=0): dense runs on OpenBLAS alone");
    }

    void amxEqualsFp32_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("inputs");
        QTest::addColumn<int>("outputs");
        QTest::addColumn<bool>("bias");
        QTest::newRow("one row") << 1 << 64 << 32 << false;
        QTest::newRow("rows and inputs off the tiles") << 37 << 100 << 64 << true;
        QTest::newRow("two input blocks") << 70 << 1100 << 96 << false;
        QTest::newRow("three input blocks, a bias") << 200 << 2112 << 64 << true;
    }

    // The kernel's error stays within what an fp32 GEMM's additions make (a few units of K's worth), and is of the
    // size of OpenBLAS's own; activations rounded to one bf16 (what a bf16 GEMM does) are far outside it.
    void amxEqualsFp32()
    {
        QFETCH(int, rows);
        QFETCH(int, inputs);
        QFETCH(int, outputs);
        QFETCH(bool, bias);
        torch::manual_seed(rows + inputs);
        const auto x = torch::randn({rows, inputs});
        const auto w = bf16Valued(torch::randn({outputs, inputs}) / std::sqrt(double(inputs)));
        const auto b = bias ? torch::randn({outputs}) : torch::Tensor();
        const auto packed = amx::PackedWeight::pack(w);
        QVERIFY(packed);
        const double amxUlps = errorInUlps(amx::linear(x, *packed, b), x, w, b);
        const double blasUlps = errorInUlps(torch::nn::functional::linear(x, w, b), x, w, b);
        const double oneBf16Ulps = errorInUlps(amx::linear(bf16Valued(x), *packed, b), x, w, b);
        qInfo("error in fp32 ulps of sum |x w|: AMX %.2f, OpenBLAS %.2f, activations as one bf16 %.1f", amxUlps, blasUlps, oneBf16Ulps);
        QVERIFY2(amxUlps <= 2.0 * inputs, qPrintable(QString("AMX %1 ulps, OpenBLAS %2").arg(amxUlps).arg(blasUlps)));
        QVERIFY2(amxUlps <= 8.0 * std::max(blasUlps, 1.0), qPrintable(QString("AMX %1 ulps, OpenBLAS %2").arg(amxUlps).arg(blasUlps)));
        QVERIFY2(oneBf16Ulps > 50.0 * std::max(amxUlps, 1.0),
                 qPrintable(QString("one bf16 part %1 ulps, three %2").arg(oneBf16Ulps).arg(amxUlps)));
    }

    void batchedRowsKeepTheirShape()
    {
        torch::manual_seed(3);
        const auto x = torch::randn({2, 5, 96});
        const auto w = bf16Valued(torch::randn({64, 96}));
        const auto y = amx::linear(x, *amx::PackedWeight::pack(w));
        QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{2, 5, 64}));
        QVERIFY(errorInUlps(y.reshape({10, 64}), x.reshape({10, 96}), w, {}) <= 2.0 * 96);
    }

    // Infinities and NaN in the activations give what an fp32 GEMM gives (inf, or NaN where inf meets a zero
    // weight or both signs), not inf - inf's NaN from splitting them; a finite value above bf16's largest (3.39e38)
    // stays finite: its first part is truncated, not rounded up to an infinity.
    void specialActivationsAsFp32()
    {
        auto w = bf16Valued(torch::randn({32, 64}) / 64);
        w.index_put_({3, 9}, 0.0f);
        auto x = torch::randn({4, 64});
        x.index_put_({0, 5}, std::numeric_limits<float>::infinity());
        x.index_put_({1, 7}, std::numeric_limits<float>::quiet_NaN());
        x.index_put_({2, 0}, 3.4e38f);
        x.index_put_({3, 9}, -std::numeric_limits<float>::infinity()); // meets w[3, 9] = 0: NaN in output 3
        const auto packed = amx::PackedWeight::pack(w);
        QVERIFY(packed);
        const auto y = amx::linear(x, *packed), ref = torch::nn::functional::linear(x, w);
        QVERIFY(torch::equal(torch::isnan(y), torch::isnan(ref)));
        QVERIFY(torch::equal(torch::isinf(y), torch::isinf(ref)));
        QVERIFY(torch::isinf(y[0]).all().item<bool>() && torch::isnan(y[1]).all().item<bool>() && torch::isnan(y[3][3]).item<bool>());
        QVERIFY(torch::isfinite(y[2]).all().item<bool>());
        const auto finite = torch::isfinite(ref);
        QVERIFY(torch::allclose(y.masked_select(finite), ref.masked_select(finite), 1e-5, 1e-4));
    }

    void packRefusesWhatItCannotHold()
    {
        QVERIFY(!amx::PackedWeight::pack(torch::randn({64, 64})));             // fp32 values that are no bf16
        QVERIFY(!amx::PackedWeight::pack(bf16Valued(torch::randn({48, 64})))); // 48 outputs: not pairs of 16
        QVERIFY(!amx::PackedWeight::pack(bf16Valued(torch::randn({64}))));
        QVERIFY(!amx::PackedWeight::pack(bf16Valued(torch::randn({64, 64})).to(torch::kFloat64)));
    }

    // dense() takes the tiles from 2^27 multiply-adds, packs a weight once and again after an in-place write, and
    // leaves a weight of fp32 values and autograd's products to LibTorch.
    void denseRoutesLargeGemms()
    {
        torch::NoGradGuard noGrad;
        torch::manual_seed(11);
        const auto x = torch::randn({256, 1024});
        auto w = bf16Valued(torch::randn({512, 1024}) / 32.0);
        QVERIFY(errorInUlps(dense(x, w), x, w, {}) <= 2.0 * 1024);
        w.mul_(2); // still bf16 values; a stale packing would give half the product
        QVERIFY(errorInUlps(dense(x, w), x, w, {}) <= 2.0 * 1024);
        const auto fp32Weight = torch::randn({512, 1024}) / 32.0;
        QVERIFY(torch::allclose(dense(x, fp32Weight), torch::nn::functional::linear(x, fp32Weight), 1e-5, 1e-5));
    }

    // A large GEMM runs on every core the engine has: its column ranges on the worker pool, each worker taking a
    // share (the seventeenth session's kernel went through at::parallel_for, inline code that runs serially in a
    // build without OpenMP, and every AMX GEMM ran on one core). Each thread's time on a CPU from the kernel's
    // scheduler statistics (nanoseconds), before and after.
    void largeGemmRunsOnEveryCore()
    {
        if (std::thread::hardware_concurrency() < 2)
            QSKIP("one core: nothing to spread over");
        // ctest runs the suites with OpenBLAS at one thread (CMakePresets.json), which leaves LibTorch's pool, and so
        // the engine's workers, at one: two here, as a run of the app on two cores has.
        const int threadsBefore = at::get_num_threads();
        at::set_num_threads(std::max(2, threadsBefore));
        const auto restore = qScopeGuard([threadsBefore] { at::set_num_threads(threadsBefore); });
        QCOMPARE(cpuWorkers(), int64_t(std::max(2, threadsBefore)));
        torch::NoGradGuard noGrad;
        const auto x = torch::randn({512, 4096});
        const auto w = bf16Valued(torch::randn({8192, 4096}) / 64.0);
        const auto packed = amx::PackedWeight::pack(w);
        QVERIFY(packed);
        (void)amx::linear(x, *packed); // the pool started and its threads seen once
        const auto before = threadCpuNanoseconds();
        const auto y = amx::linear(x, *packed);
        const auto after = threadCpuNanoseconds();
        std::vector<double> worked;
        double total = 0;
        for (const auto& [tid, ns] : after) {
            const auto it = before.find(tid);
            const double delta = double(ns - (it == before.end() ? 0 : it->second));
            worked.push_back(delta);
            total += delta;
        }
        std::sort(worked.rbegin(), worked.rend());
        QVERIFY(total > 0);
        const double secondBusiest = worked.size() > 1 ? worked[1] / total : 0.0;
        QVERIFY2(secondBusiest >= 0.2,
                 qPrintable(QString("the second busiest thread did %1% of the GEMM's CPU time").arg(100 * secondBusiest)));
        QVERIFY(errorInUlps(y.slice(0, 0, 16), x.slice(0, 0, 16), w, {}) <= 2.0 * 4096);
    }

    // One row (a decode step) goes through a matrix-vector product: the same values as the GEMM within fp32's
    // rounding, any leading shape, with a bias, and autograd's gradient.
    void oneRowAsMatrixVector()
    {
        const auto w = torch::randn({96, 200}), b = torch::randn({96});
        const auto x = torch::randn({1, 1, 200}, torch::requires_grad());
        const auto y = dense(x, w, b);
        QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{1, 1, 96}));
        QVERIFY(errorInUlps(y.detach().reshape({1, 96}), x.detach().reshape({1, 200}), w, b) <= 2.0 * 200);
        y.sum().backward();
        QVERIFY(torch::allclose(x.grad().reshape({200}), w.sum(0), 1e-5, 1e-5));
        QVERIFY(torch::allclose(dense(torch::ones({1, 200}), w), w.sum(1).unsqueeze(0), 1e-4, 1e-4));
    }

    // Tensors made in inference mode keep no version counter: dense() must not ask for one.
    void inferenceModeWeights()
    {
        c10::InferenceMode inference;
        torch::manual_seed(13);
        const auto x = torch::randn({256, 1024});
        const auto w = bf16Valued(torch::randn({512, 1024}) / 32.0);
        QVERIFY(errorInUlps(dense(x, w), x, w, {}) <= 2.0 * 1024);
        QVERIFY(errorInUlps(dense(x, w), x, w, {}) <= 2.0 * 1024);
    }

    void autogradStaysWithLibTorch()
    {
        torch::manual_seed(12);
        const auto x = torch::randn({256, 1024}).requires_grad_();
        const auto w = bf16Valued(torch::randn({512, 1024}) / 32.0);
        const auto y = dense(x, w);
        QVERIFY(y.grad_fn() != nullptr);
        y.sum().backward();
        QVERIFY(torch::allclose(x.grad(), w.sum(0).expand({256, 1024}), 1e-4, 1e-4));
    }
};

QTEST_GUILESS_MAIN(TestDense)
#include "test_dense.moc"

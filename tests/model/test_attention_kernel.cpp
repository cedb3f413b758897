// The attention kernel against attention written out in float64: grouped-query heads, causal masks with
// and without a KV-cache past, one decoding query, and the captured rows x columns. On LibTorch >= 2.1 the
// fused path (scaled_dot_product_attention, context only; captured rows formed separately) must agree
// with the explicit one.
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "kernels/attention.h"

#include <torch/types.h>

#include <limits>
#endif

using namespace ropescope;

namespace {

struct Case {
    const char* name;
    int64_t queries, past;
    bool causal;
};

const Case kCases[] = {
    {"no mask", 7, 0, false},
    {"causal prefill", 9, 0, true},
    {"causal after a past", 4, 5, true},
    {"one query after a past", 1, 8, true},
};

// softmax(q k^T / sqrt(d) + mask) v per head in float64, k and v repeated for grouped-query heads.
std::pair<torch::Tensor, torch::Tensor> reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const Case& c)
{
    const int64_t groups = q.size(0) / k.size(0), keys = k.size(1);
    const auto kk = k.to(torch::kFloat64).repeat_interleave(groups, 0), vv = v.to(torch::kFloat64).repeat_interleave(groups, 0);
    auto scores = torch::matmul(q.to(torch::kFloat64), kk.transpose(1, 2)) / std::sqrt(static_cast<double>(q.size(2)));
    if (c.causal) {
        const auto row = torch::arange(c.queries, torch::kInt64).unsqueeze(1) + c.past;
        scores = scores.masked_fill(torch::arange(keys, torch::kInt64).unsqueeze(0) > row, -std::numeric_limits<double>::infinity());
    }
    const auto probs = torch::softmax(scores, -1);
    return {torch::matmul(probs, vv), probs};
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

class AttentionKernelTest : public QObject {
    Q_OBJECT
private:
    void checkPath(kernels::AttentionPath path)
    {
        kernels::setAttentionPath(path);
        torch::manual_seed(11);
        for (const Case& c : kCases) {
            const int64_t keys = c.past + c.queries;
            const auto q = torch::randn({6, c.queries, 16}), k = torch::randn({3, keys, 16}), v = torch::randn({3, keys, 16});
            const auto [context, probs] = reference(q, k, v, c);
            kernels::CaptureSelection selection{
                torch::tensor({c.queries - 1, int64_t(0)}), torch::tensor({int64_t(0), keys - 1, keys / 2}), {}};
            torch::Tensor captured;
            const auto out = kernels::attention(q, k, v, {c.causal, c.past, {}, {}}, &selection, &captured);
            QVERIFY2(maxDiff(out, context) < 1e-5, c.name);
            QCOMPARE(captured.sizes().vec(), (std::vector<int64_t>{6, 2, 3}));
            QVERIFY2(maxDiff(captured, probs.index_select(1, selection.rows).index_select(2, selection.cols)) < 1e-6, c.name);
            // A decoder hands in the rows' mask it made once; the probabilities must not change.
            selection.rowsMask = kernels::causalRowsMask(selection.rows, c.past, keys, torch::kFloat32);
            kernels::attention(q, k, v, {c.causal, c.past, {}, {}}, &selection, &captured);
            QVERIFY2(maxDiff(captured, probs.index_select(1, selection.rows).index_select(2, selection.cols)) < 1e-6, c.name);
            // Empty selections mean every row and every column.
            kernels::CaptureSelection all;
            kernels::attention(q, k, v, {c.causal, c.past, {}, {}}, &all, &captured);
            QVERIFY2(maxDiff(captured, probs) < 1e-6, c.name);
            QVERIFY2(maxDiff(kernels::attention(q, k, v, {c.causal, c.past, {}, {}}), context) < 1e-5, c.name);
        }
        // A KV cache of fixed capacity: one query sees the first 7 of 12 slots (the rest not yet written). The
        // same as attending to those 7 keys alone, context and captured probabilities (zero past them).
        const auto q = torch::randn({6, 1, 16}), k = torch::randn({3, 12, 16}), v = torch::randn({3, 12, 16});
        const auto visible = (torch::arange(12) < 7).unsqueeze(0);
        kernels::CaptureSelection all;
        torch::Tensor captured, written;
        const auto context = kernels::attention(q, k, v, {false, 0, {}, visible}, &all, &captured);
        const auto want = kernels::attention(q, k.narrow(1, 0, 7), v.narrow(1, 0, 7), {false, 0, {}, {}}, &all, &written);
        QVERIFY(maxDiff(context, want) < 1e-6);
        QCOMPARE(captured.sizes().vec(), (std::vector<int64_t>{6, 1, 12}));
        QVERIFY(maxDiff(captured.narrow(2, 0, 7), written) < 1e-7);
        QCOMPARE(captured.narrow(2, 7, 5).abs().max().item<float>(), 0.0f);
    }

private slots:
    void explicitPathMatchesReference() { checkPath(kernels::AttentionPath::Explicit); }

    void fusedPathMatchesReference()
    {
        if (!kernels::fusedAttentionAvailable())
            QSKIP("LibTorch < 2.1: no scaled_dot_product_attention (scripts/check_libtorch2.sh tests this path)");
        checkPath(kernels::AttentionPath::Fused);
        QVERIFY(kernels::attentionPath() == kernels::AttentionPath::Fused);
    }

    void explicitPathChunksLongQueries()
    {
        // 2^25 scores is the explicit path's chunk size: 3000 queries x 3000 keys x 4 heads is split, and
        // each chunk must keep its own causal offset.
        kernels::setAttentionPath(kernels::AttentionPath::Explicit);
        torch::manual_seed(5);
        const Case c{"chunked", 3000, 0, true};
        const auto q = torch::randn({4, 3000, 8}), k = torch::randn({4, 3000, 8}), v = torch::randn({4, 3000, 8});
        QVERIFY(maxDiff(kernels::attention(q, k, v, {true, 0, {}, {}}), reference(q, k, v, c).first) < 1e-5);
    }

    void unavailableFusedPathKeepsExplicit()
    {
        kernels::setAttentionPath(kernels::AttentionPath::Fused);
        QCOMPARE(kernels::attentionPath() == kernels::AttentionPath::Fused, kernels::fusedAttentionAvailable());
    }
};

} // namespace

QTEST_APPLESS_MAIN(AttentionKernelTest)
#include "test_attention_kernel.moc"

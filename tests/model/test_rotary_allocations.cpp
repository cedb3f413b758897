// The 2025 allocations in the decoder: MHRoPE's per-head axes (over KV heads, or over query heads with keys
// repeated per query head), VideoRoPE++'s NTK-scaled time base and XD-RoPE's four axes at its NTK-alpha base. Each is checked against an allocation
// the decoder already runs: a per-head head on axis c attends exactly as that head under "every pair on c".
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/geometry/scheme.h"
#include "core/model/engine/checkpoint.h"
#include "core/model/engine/language_model.h"

#include <torch/types.h>

#include <cmath>
#endif

using namespace ropescope;
using namespace ropescope::model;
using geometry::FrequencyAllocation;

namespace {

const QString kFixture = ROPESCOPE_TEST_DATA + "/fixtures/qwen2vl-tiny";

geometry::PositionTable mhropeTable(int heads)
{
    geometry::SchemeParams p;
    p.kind = geometry::SchemeKind::Mhrope;
    p.rotary.theta = 10000;
    p.rotary.headDim = 16;
    p.rotary.heads = heads;
    p.sections = {1, 1, 1};
    return geometry::buildPositionTable(geometry::parseLayout("text:3,image:3x4,text:2,video:2x2x3,text:2"), p);
}

// Attention of both layers with every layer fed the table's rotary.
std::vector<torch::Tensor> attentions(const LanguageModel& lm, const TextConfig& text, const geometry::PositionTable& table,
                                      const torch::Tensor& embeds)
{
    const LayerRotary r = rotaryForTable(table, text, torch::kCPU, 0, table.size());
    DecoderCapture capture;
    capture.layers = {0, 1};
    return lm.forward(embeds, {r, r}, nullptr, capture).attentions;
}

// The first layer's attention of one head (later layers see every head's output, so they differ anyway).
double headDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, int head)
{
    return (a[0][head] - b[0][head]).abs().max().item<double>();
}

} // namespace

class TestRotaryAllocations : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void perQueryHeadAxesMatchOneAxisAllocations()
    {
        // The fixture's 2 KV heads are too few for three axes: the axes go over its 4 query heads.
        const int rotaryHeads = 4;
        const Checkpoint ck = Checkpoint::open(kFixture);
        const TextConfig& text = ck.config().text;
        QCOMPARE(text.heads, 4);
        QCOMPARE(text.kvHeads, 2);
        const LanguageModel lm(ck, torch::kCPU);
        torch::manual_seed(5);
        geometry::PositionTable table = mhropeTable(rotaryHeads);
        const auto embeds = torch::randn({table.size(), 64});
        QVERIFY(table.allocation.perHead());
        const auto mixed = attentions(lm, text, table, embeds); // heads 0, 1, 2 on t, h, w; head 3 no rotary

        geometry::PositionTable single = table;
        for (int axis = 0; axis < 3; ++axis) {
            std::vector<int> sections(3, 0);
            sections[static_cast<size_t>(axis)] = 8;
            single.allocation = FrequencyAllocation::sectioned(sections);
            const double diff = headDiff(mixed, attentions(lm, text, single, embeds), axis);
            QVERIFY2(diff < 1e-6, qPrintable(QString("head %1 differs from all-pairs-on-axis-%1 by %2").arg(axis).arg(diff)));
        }
        // The fourth head has no rotary: it attends as if every position were 0.
        single.allocation = FrequencyAllocation::sectioned({8, 0, 0});
        single.positions.setZero();
        QVERIFY(headDiff(mixed, attentions(lm, text, single, embeds), 3) < 1e-6);
        // And the mixture really differs from one allocation for all heads.
        single = table;
        single.allocation = FrequencyAllocation::sectioned({8, 0, 0});
        QVERIFY(headDiff(mixed, attentions(lm, text, single, embeds), 1) > 1e-3);
    }

    void perKvHeadAxes()
    {
        // Two KV heads, each serving two query heads: sections [1, 1, 0] put KV head 0 (query heads 0, 1) on t and
        // KV head 1 (query heads 2, 3) on h.
        const Checkpoint ck = Checkpoint::open(kFixture);
        const TextConfig& text = ck.config().text;
        const LanguageModel lm(ck, torch::kCPU);
        torch::manual_seed(6);
        geometry::PositionTable table = mhropeTable(4);
        table.rotary.heads = 2;
        table.allocation = FrequencyAllocation::perHeadAxes({1, 1, 0});
        const auto embeds = torch::randn({table.size(), 64});
        const auto mixed = attentions(lm, text, table, embeds);
        geometry::PositionTable single = table;
        single.allocation = FrequencyAllocation::sectioned({8, 0, 0});
        const auto onT = attentions(lm, text, single, embeds);
        single.allocation = FrequencyAllocation::sectioned({0, 8, 0});
        const auto onH = attentions(lm, text, single, embeds);
        for (int head : {0, 1})
            QVERIFY(headDiff(mixed, onT, head) < 1e-6);
        for (int head : {2, 3})
            QVERIFY(headDiff(mixed, onH, head) < 1e-6);
        // A head count that is neither the KV nor the query heads is refused by name.
        table.rotary.heads = 3;
        table.allocation = FrequencyAllocation::perHeadAxes({1, 1, 1});
        QVERIFY_EXCEPTION_THROWN(rotaryForTable(table, text, torch::kCPU, 0, table.size()), ModelError);
    }

    void videoRopePlusScalesOnlyTheTimeBase()
    {
        const Checkpoint ck = Checkpoint::open(kFixture);
        const TextConfig& text = ck.config().text;
        geometry::SchemeParams p;
        p.kind = geometry::SchemeKind::VideoRopePlus;
        p.rotary.theta = text.ropeTheta;
        p.rotary.headDim = text.headDim();
        p.ntkFactor = 4;
        const auto table = geometry::buildPositionTable(geometry::parseLayout("text:2,video:3x2x3,text:2"), p);
        const double scale = std::pow((32768.0 * 4 - 1) / 32767.0, 16.0 / 14.0);
        QCOMPARE(table.allocation.temporalThetaScale, scale);
        const LayerRotary r = rotaryForTable(table, text, torch::kCPU, 0, table.size());
        const auto component = table.allocation.componentTable(8);
        for (int token : {3, 9, 20})
            for (int j = 0; j < 8; ++j) {
                const int c = component[static_cast<size_t>(j)];
                const double theta = c == 0 ? text.ropeTheta * scale : text.ropeTheta;
                const double expected = std::cos(table.positions(token, c) * std::pow(theta, -2.0 * j / 16));
                QVERIFY(std::abs(r.cos[token][j].item<double>() - expected) < 1e-5);
            }
        // A factor of 1 leaves VideoRoPE's rotary unchanged.
        p.ntkFactor = 1;
        const auto plain = geometry::buildPositionTable(geometry::parseLayout("text:2,video:3x2x3,text:2"), p);
        QCOMPARE(plain.allocation.temporalThetaScale, 1.0);
        p.kind = geometry::SchemeKind::VideoRope;
        const auto videoRope = geometry::buildPositionTable(geometry::parseLayout("text:2,video:3x2x3,text:2"), p);
        QVERIFY(torch::equal(rotaryForTable(plain, text, torch::kCPU, 0, plain.size()).cos,
                             rotaryForTable(videoRope, text, torch::kCPU, 0, videoRope.size()).cos));
    }

    // XD-RoPE's four axes in the decoder: pair j turns by component j / (d/8) ([2,2,2,2] at head_dim 16), every
    // pair at theta * alpha^(d/(d-2)); the model's tokens only (no newline column: the prompt has no such tokens).
    void xdRopeTurnsFourAxesAtTheAlphaBase()
    {
        const Checkpoint ck = Checkpoint::open(kFixture);
        const TextConfig& text = ck.config().text;
        geometry::SchemeParams p = geometry::defaultSchemeParams(geometry::SchemeKind::XdRope);
        p.rotary.theta = text.ropeTheta;
        p.rotary.headDim = text.headDim();
        p.newlineColumn = false;
        const auto layout = geometry::parseLayout("text:2,image:2x3,text:3,video:2x2x2,text:2");
        const auto table = geometry::buildPositionTable(layout, p);
        QCOMPARE(static_cast<long long>(table.size()), layout.tokenCount());
        QCOMPARE(table.components(), 4);
        const double base = text.ropeTheta * std::pow(1000.0, 16.0 / 14.0);
        const LayerRotary r = rotaryForTable(table, text, torch::kCPU, 0, table.size());
        for (int token = 0; token < table.size(); ++token)
            for (int j = 0; j < 8; ++j) {
                const double angle = table.positions(token, j / 2) * std::pow(base, -2.0 * j / 16);
                QVERIFY2(std::abs(r.cos[token][j].item<double>() - std::cos(angle)) < 1e-5 &&
                             std::abs(r.sin[token][j].item<double>() - std::sin(angle)) < 1e-5,
                         qPrintable(QString("token %1 pair %2").arg(token).arg(j)));
            }
        // The grid's w and h restart per image, t counts images and frames: image 0, frames 1 and 2.
        QCOMPARE(table.positions(2, 3), 0.0);
        QCOMPARE(table.positions(2 + 6 + 3, 3), 1.0);
        QCOMPARE(table.positions(2 + 6 + 3 + 4, 3), 2.0);
        QCOMPARE(table.positions(2 + 5, 1), 2.0); // row 1, column 2 of the image
        QCOMPARE(table.positions(2 + 5, 2), 1.0);
    }
};

QTEST_APPLESS_MAIN(TestRotaryAllocations)
#include "test_rotary_allocations.moc"

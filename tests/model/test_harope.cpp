// HARoPE head maps (model.layers.{i}.self_attn.harope.{a_u,a_v,sigma}): q' = M q, k' = M^-T k before the
// rotation. The maps change attention, keep it a function of relative position only, and M = I is RoPE.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/model/engine/language_model.h"
#include "core/model/engine/tensor_io.h"
#include "kernels/rotary.h"

#include <torch/types.h>

#include <cmath>
#endif

using namespace ropescope;
using namespace ropescope::model;

namespace {

const QString kFixture = ROPESCOPE_TEST_DATA + "/fixtures/qwen2vl-tiny";

// The fixture model plus HARoPE tensors: random skew generators and scales, or the identity map.
QString haropeModel(const QTemporaryDir& dir, const QString& name, bool identity)
{
    const QString path = dir.filePath(name);
    QDir().mkpath(path);
    QFile::copy(kFixture + "/config.json", path + "/config.json");
    const SafeTensors base = SafeTensors::open(kFixture + "/model.safetensors");
    SafeTensorsWriter w;
    for (const TensorInfo& t : base.tensors())
        addTensor(w, t.name, toTorch(base, t));
    torch::manual_seed(3);
    for (int layer = 0; layer < 2; ++layer) {
        const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.harope.";
        const auto a = identity ? torch::zeros({4, 16, 16}) : 0.3 * torch::randn({4, 16, 16});
        const auto b = identity ? torch::zeros({4, 16, 16}) : 0.3 * torch::randn({4, 16, 16});
        // softplus(sigma) + 1e-6 = 1 for the identity
        const auto sigma = identity ? torch::full({4, 16}, std::log(std::exp(1.0 - 1e-6) - 1.0)) : 0.5 * torch::randn({4, 16});
        addTensor(w, p + "a_u", a);
        addTensor(w, p + "a_v", b);
        addTensor(w, p + "sigma", sigma);
    }
    QFile f(path + "/model.safetensors");
    f.open(QIODevice::WriteOnly);
    f.write(w.bytes());
    return path;
}

std::vector<torch::Tensor> attentions(const Checkpoint& ck, const torch::Tensor& embeds, double shift)
{
    const LanguageModel lm(ck, torch::kCPU);
    const int64_t L = embeds.size(0);
    const auto positions = (torch::arange(L, torch::kFloat32) + shift).unsqueeze(1).repeat({1, 3});
    const auto inv = kernels::inverseFrequencies(ck.config().text.ropeTheta, ck.config().text.headDim());
    const auto component = torch::tensor({0, 0, 1, 1, 1, 2, 2, 2}, torch::kInt64); // mrope_section [2,3,3]
    const auto [cos, sin] = kernels::rotaryTables(positions, inv, component);
    DecoderCapture capture;
    capture.layers = {0, 1};
    return lm.forward(embeds, {{cos, sin}, {cos, sin}}, nullptr, capture).attentions;
}

double maxDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b)
{
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i)
        m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
    return m;
}

} // namespace

class TestHarope : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void headMapsBehave()
    {
        QTemporaryDir dir;
        const Checkpoint plain = Checkpoint::open(kFixture);
        const Checkpoint harope = Checkpoint::open(haropeModel(dir, "harope", false));
        const Checkpoint identity = Checkpoint::open(haropeModel(dir, "identity", true));
        QVERIFY(!plain.config().harope);
        QVERIFY(harope.config().harope);
        torch::manual_seed(11);
        const auto embeds = torch::randn({12, 64});

        const auto base = attentions(plain, embeds, 0);
        const auto mapped = attentions(harope, embeds, 0);
        QVERIFY2(maxDiff(base, mapped) > 1e-3, "HARoPE maps had no effect");
        // Relative only: shifting every position leaves the attention unchanged.
        QVERIFY2(maxDiff(mapped, attentions(harope, embeds, 37.0)) < 1e-5, "HARoPE attention depends on absolute position");
        // M = I is plain RoPE.
        QVERIFY(maxDiff(base, attentions(identity, embeds, 0)) < 1e-5);
    }
};

QTEST_APPLESS_MAIN(TestHarope)
#include "test_harope.moc"

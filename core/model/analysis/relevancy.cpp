#include "core/model/analysis/relevancy.h"

#include "core/model/analysis/own_prior.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>
#include <torch/csrc/autograd/autograd.h>
#include <stdexcept>

namespace ropescope::model {

static bool sameRotaryInput(const geometry::PositionTable& a, const geometry::PositionTable& b)
{
    return a.scheme == b.scheme && a.allocation.toString() == b.allocation.toString() &&
        a.allocation.temporalThetaScale == b.allocation.temporalThetaScale && a.allocation.thetaScale == b.allocation.thetaScale &&
        a.positions.rows() == b.positions.rows() && a.positions.cols() == b.positions.cols() && a.positions == b.positions;
}

Relevancy gradientRelevancy(Vlm& vlm, const AttentionRun& run)
{
    if (run.generated.empty())
        throw std::invalid_argument("relevancy: the run generated no answer token");
    const ForwardResult& r = run.result;
    const auto n = static_cast<int64_t>(run.prompt.ids.size());

    torch::AutoGradMode grad(true);
    const torch::Tensor embeds = r.inputsEmbeds.detach().clone().requires_grad_(true); // roots the graph
    // Layers of one scheme have equal tables (AGE alternates two): each distinct table becomes rotary once.
    std::vector<LayerRotary> rotary;
    for (size_t l = 0; l < r.layerTables.size(); ++l) {
        const geometry::PositionTable& table = r.layerTables[l];
        size_t same = 0;
        while (same < l && !sameRotaryInput(r.layerTables[same], table))
            ++same;
        rotary.push_back(same < l ? rotary[same] : vlm.rotaryFor(table, 0, n));
    }
    // Every attention layer's full L x L probabilities, contexts and values. A Gated DeltaNet layer (Qwen3.5)
    // has no attention matrix to weigh: the rule passes the relevance through it unchanged (its token mixing
    // is not attributed), as Chefer et al. pass it through the MLPs.
    DecoderCapture capture;
    capture.layers = vlm.config().text.attentionLayers();
    capture.contexts = true;
    DeepStackInput deepstack;
    if (!r.deepstackEmbeds.empty()) {
        std::vector<int64_t> visual;
        for (int64_t i = 0; i < n; ++i)
            if (run.prompt.ids[static_cast<size_t>(i)] == vlm.config().imageToken ||
                run.prompt.ids[static_cast<size_t>(i)] == vlm.config().videoToken)
                visual.push_back(i);
        deepstack.positions = torch::tensor(visual, torch::kInt64).to(embeds.device());
        deepstack.features = r.deepstackEmbeds;
    }
    const DecoderOutput out = vlm.language().forward(embeds, rotary, nullptr, capture, deepstack.features.empty() ? nullptr : &deepstack);

    Relevancy result;
    result.target = run.generated.front();
    const torch::Tensor y = out.logits[out.logits.size(0) - 1][result.target];
    const std::vector<torch::Tensor> gradients = torch::autograd::grad({y}, out.contexts);

    torch::NoGradGuard noGrad;
    auto relevance = torch::eye(n, torch::TensorOptions().dtype(torch::kFloat64).device(embeds.device()));
    for (size_t l = 0; l < out.attentions.size(); ++l) {
        const auto probs = out.attentions[l].to(torch::kFloat64);                                                           // [H, L, L]
        const auto dA = torch::matmul(gradients[l].to(torch::kFloat64), out.values[l].to(torch::kFloat64).transpose(1, 2)); // dy/dA
        const auto weighted = (dA * probs).clamp_min(0).mean(0);                                                            // [L, L]
        relevance = relevance + torch::matmul(weighted, relevance);
    }
    const auto last = relevance[n - 1].to(torch::kCPU);
    const auto image = last.index_select(0, torch::tensor(run.prompt.imageTokens, torch::kInt64));
    const auto map = image.to(torch::kFloat32).contiguous();
    result.map.assign(map.data_ptr<float>(), map.data_ptr<float>() + map.numel());
    const double all = last.sum().item<double>() - last[n - 1].item<double>();
    result.textShare = all > 0 ? (all - image.sum().item<double>()) / all : 0.0;
    result.attentionCorrelation = pearson(result.map, headMap(run.tokenAttention(run.layers.size() - 1, run.questionTokens.back()), {}));
    return result;
}

} // namespace ropescope::model

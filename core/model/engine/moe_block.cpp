#include "core/model/engine/moe_block.h"

#include "core/model/engine/checkpoint.h"

namespace ropescope::model {
namespace {

// A SwiGLU whose gate and up are one matrix (the first `width` outputs are the gate). inputMajor: the weights are
// stored [in, out] (the Hub's fused qwen3_vl_moe experts), so x @ w; otherwise nn.Linear's [out, in].
torch::Tensor swiglu(const torch::Tensor& x, const torch::Tensor& gateUp, const torch::Tensor& down, int64_t width, bool inputMajor)
{
    const auto both = inputMajor ? x.matmul(gateUp) : torch::nn::functional::linear(x, gateUp);
    const auto act = torch::silu(both.narrow(-1, 0, width)) * both.narrow(-1, width, width);
    return inputMajor ? act.matmul(down) : torch::nn::functional::linear(act, down);
}

// GLM's choice: sigmoid scores plus the correction bias; only the best `topkGroup` groups (each scored by the
// sum of its two best) stay in the running, the others' scores become 0 as transformers' masked_fill makes them.
torch::Tensor groupedChoice(const torch::Tensor& scores, const MoeWeights& w, const MoeConfig& c)
{
    auto choice = w.correctionBias.defined() ? scores + w.correctionBias.to(scores.scalar_type()) : scores;
    if (c.groups <= 1)
        return choice;
    const int64_t n = choice.size(0), perGroup = c.experts / c.groups;
    const auto groupScores = std::get<0>(choice.view({n, c.groups, perGroup}).topk(2, -1)).sum(-1); // [n, groups]
    const auto best = std::get<1>(groupScores.topk(c.topkGroup, -1, /*largest=*/true, /*sorted=*/false));
    const auto keep =
        torch::zeros_like(groupScores).scatter_(1, best, 1.0).unsqueeze(-1).expand({n, c.groups, perGroup}).reshape({n, c.experts});
    return choice.masked_fill(keep == 0, 0.0);
}

} // namespace

MoeWeights loadMoeWeights(const Checkpoint& ck, const std::string& p, const TextConfig& t, torch::Device device, torch::Dtype dtype)
{
    const MoeConfig& m = t.moe;
    const int64_t h = t.hidden, experts = m.experts, width = m.intermediate;
    auto load = [&](const std::string& name, std::vector<int64_t> shape) { return ck.tensor(p + name, shape).to(device, dtype); };
    MoeWeights w;
    w.router = load("gate.weight", {experts, h});
    if (m.router == RouterKind::SigmoidGrouped) // the choice is made in float32 (transformers' router casts)
        w.correctionBias = ck.tensor(p + "gate.e_score_correction_bias", {experts}).to(device, torch::kFloat32);
    if (ck.has(p + "experts.0.gate_proj.weight")) {
        for (int64_t e = 0; e < experts; ++e) {
            const std::string q = "experts." + std::to_string(e) + ".";
            // Joined once: one GEMM for gate and up per expert on its tokens. The peak is one expert's copy.
            w.gateUp.push_back(torch::cat({load(q + "gate_proj.weight", {width, h}), load(q + "up_proj.weight", {width, h})}, 0));
            w.down.push_back(load(q + "down_proj.weight", {h, width}));
        }
    } else {
        // qwen3_vl_moe: the Hub's [E, hidden, 2I] / [E, I, hidden], or transformers 5's [E, 2I, hidden] /
        // [E, hidden, I]; down_proj's shape says which (when hidden == I both read the same: the Hub's form).
        const std::vector<int64_t> hub{experts, width, h};
        w.inputMajor = ck.storedShape(p + "experts.down_proj") != std::vector<int64_t>{experts, h, width} || width == h;
        const torch::Tensor gateUp =
            load("experts.gate_up_proj",
                 w.inputMajor ? std::vector<int64_t>{experts, h, 2 * width} : std::vector<int64_t>{experts, 2 * width, h});
        const torch::Tensor down = load("experts.down_proj", w.inputMajor ? hub : std::vector<int64_t>{experts, h, width});
        for (int64_t e = 0; e < experts; ++e) {
            w.gateUp.push_back(gateUp.select(0, e)); // views: they keep the one tensor alive
            w.down.push_back(down.select(0, e));
        }
    }
    if (m.sharedIntermediate > 0) {
        const int64_t s = m.sharedIntermediate;
        const std::string q = m.sharedExpertGate ? "shared_expert." : "shared_experts."; // Qwen3.5 : GLM
        w.sharedGateUp = torch::cat({load(q + "gate_proj.weight", {s, h}), load(q + "up_proj.weight", {s, h})}, 0);
        w.sharedDown = load(q + "down_proj.weight", {h, s});
        if (m.sharedExpertGate)
            w.sharedGate = load("shared_expert_gate.weight", {1, h});
    }
    return w;
}

RouterTrace routeTokens(const torch::Tensor& x, const MoeWeights& w, const MoeConfig& c)
{
    RouterTrace r;
    if (c.router == RouterKind::Softmax) {
        // transformers: softmax in float32, the top-k by descending probability, renormalised to sum 1.
        const auto logits = torch::nn::functional::linear(x, w.router);
        r.scores = torch::softmax(logits, -1, torch::kFloat32);
        std::tie(r.weights, r.experts) = r.scores.topk(c.topK, -1);
        if (c.normTopK)
            r.weights = r.weights / r.weights.sum(-1, true);
        return r;
    }
    // GLM: logits in float32, sigmoid scores; the bias moves the choice, the weights are the plain scores.
    r.scores = torch::nn::functional::linear(x.to(torch::kFloat32), w.router.to(torch::kFloat32));
    const auto scores = torch::sigmoid(r.scores);
    const auto chosen = std::get<1>(groupedChoice(scores, w, c).topk(c.topK, -1, /*largest=*/true, /*sorted=*/false));
    r.experts = std::get<0>(chosen.sort(-1)); // by expert id: topk's own order is unspecified
    r.weights = scores.gather(1, r.experts);
    if (c.normTopK)
        r.weights = r.weights / (r.weights.sum(-1, true) + 1e-20);
    r.weights = r.weights * c.routedScaling;
    return r;
}

torch::Tensor moeForward(const torch::Tensor& x, const MoeWeights& w, const MoeConfig& c, RouterTrace* trace)
{
    const auto lead = x.sizes().slice(0, x.dim() - 1).vec();
    const int64_t hidden = x.size(-1), k = c.topK, width = c.intermediate;
    const auto flat = x.reshape({-1, hidden});
    RouterTrace r = routeTokens(flat, w, c);

    // Every (token, slot) sorted by expert: each expert's tokens are one contiguous run of the order. The rows are
    // gathered once and every step but the two GEMMs runs once over all slots, so an expert costs two operations
    // (256 experts at 1k tokens: about 1,500 fewer small operations per layer than gathering, activating,
    // weighting and adding back expert by expert).
    const auto slots = r.experts.flatten();
    const auto order = slots.argsort();
    const auto counts = torch::bincount(slots.cpu(), {}, c.experts); // the one host read per layer
    const auto tokenOf = torch::div(order, k, "floor");
    const int64_t* count = counts.data_ptr<int64_t>();
    // Each expert's GEMM on its run of `rows`, joined in the same order (torch::cat keeps autograd: relevancy).
    auto perExpert = [&](const torch::Tensor& rows, const std::vector<torch::Tensor>& weights) {
        std::vector<torch::Tensor> parts;
        int64_t start = 0;
        for (int64_t e = 0; e < c.experts; ++e) {
            if (const int64_t n = count[e]; n > 0) {
                const auto& m = weights[static_cast<size_t>(e)];
                parts.push_back(rows.narrow(0, start, n).mm(w.inputMajor ? m : m.t()));
                start += n;
            }
        }
        return torch::cat(parts);
    };
    const auto both = perExpert(flat.index_select(0, tokenOf), w.gateUp); // [N*k, 2I]
    const auto act = torch::silu(both.narrow(1, 0, width)) * both.narrow(1, width, width);
    const auto slotWeights = r.weights.flatten().index_select(0, order).to(x.scalar_type()).unsqueeze(1);
    auto out = torch::zeros_like(flat).index_add_(0, tokenOf, perExpert(act, w.down) * slotWeights);
    if (w.sharedGateUp.defined()) {
        auto shared = swiglu(flat, w.sharedGateUp, w.sharedDown, c.sharedIntermediate, false);
        if (w.sharedGate.defined())
            shared = shared * torch::sigmoid(torch::nn::functional::linear(flat, w.sharedGate));
        out = out + shared;
    }
    if (trace) {
        auto shaped = [&](const torch::Tensor& t) {
            std::vector<int64_t> s = lead;
            s.push_back(t.size(-1));
            return t.view(s);
        };
        trace->scores = shaped(r.scores);
        trace->experts = shaped(r.experts);
        trace->weights = shaped(r.weights);
    }
    return out.view(x.sizes());
}

} // namespace ropescope::model

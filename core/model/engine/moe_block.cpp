#include "core/model/engine/moe_block.h"

#include "core/model/engine/checkpoint.h"
#include "core/model/engine/cpu_threads.h"
#include "kernels/linear_few_rows.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>

namespace ropescope::model {
namespace {

// The shared expert's SwiGLU, in nn.Linear's layout: gate and up one matrix [2 * width, in] (the gate first).
torch::Tensor swiglu(const torch::Tensor& x, const torch::Tensor& gateUp, const torch::Tensor& down, int64_t width)
{
    const auto both = torch::nn::functional::linear(x, gateUp);
    return torch::nn::functional::linear(torch::silu(both.narrow(-1, 0, width)) * both.narrow(-1, width, width), down);
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

// One expert's tokens: rows [start, start + rows) of the slots sorted by expert.
struct ExpertRun {
    int64_t expert, start, rows;
};

// The runs cut into at most `groups` consecutive groups of about equal rows (the work of one core each).
std::vector<std::vector<ExpertRun>> groupsByRows(const std::vector<ExpertRun>& runs, int64_t groups)
{
    int64_t total = 0;
    for (const ExpertRun& run : runs)
        total += run.rows;
    std::vector<std::vector<ExpertRun>> out;
    int64_t done = 0;
    for (const ExpertRun& run : runs) {
        // A new group starts when the rows so far passed the current group's share.
        if (out.empty() || (static_cast<int64_t>(out.size()) < groups && done * groups >= static_cast<int64_t>(out.size()) * total))
            out.emplace_back();
        out.back().push_back(run);
        done += run.rows;
    }
    return out;
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
    // A CPU that runs the few-rows kernel gets each expert packed into its panels (a copy the size of the
    // expert, made one expert at a time), all of a layer's in one storage of large pages (fewRowsStorage);
    // elsewhere the matrices are kept as loaded.
    const bool panels = device.is_cpu() && dtype == torch::kFloat32 && kernels::linearFewRowsAvailable();
    const int64_t gateUpFloats = kernels::fewRowsPanelFloats(2 * width, h), downFloats = kernels::fewRowsPanelFloats(h, width);
    const torch::Tensor storage = panels ? kernels::fewRowsStorage(experts * (gateUpFloats + downFloats)) : torch::Tensor();
    auto keep = [&](const torch::Tensor& gateUp, const torch::Tensor& down) {
        if (panels) {
            const int64_t at = static_cast<int64_t>(w.gateUpPanels.size()) * (gateUpFloats + downFloats);
            w.gateUpPanels.push_back(kernels::packFewRowsWeight(gateUp, storage.narrow(0, at, gateUpFloats)));
            w.downPanels.push_back(kernels::packFewRowsWeight(down, storage.narrow(0, at + gateUpFloats, downFloats)));
        } else {
            w.gateUp.push_back(gateUp);
            w.down.push_back(down);
        }
    };
    if (ck.has(p + "experts.0.gate_proj.weight")) {
        for (int64_t e = 0; e < experts; ++e) {
            const std::string q = "experts." + std::to_string(e) + ".";
            // Joined once: one GEMM for gate and up per expert on its tokens. The peak is one expert's copy.
            keep(torch::cat({load(q + "gate_proj.weight", {width, h}), load(q + "up_proj.weight", {width, h})}, 0),
                 load(q + "down_proj.weight", {h, width}));
        }
    } else {
        // qwen3_vl_moe: the Hub's [E, hidden, 2I] / [E, I, hidden], or transformers 5's [E, 2I, hidden] /
        // [E, hidden, I]; down_proj's shape says which (when hidden == I both read the same: the Hub's form).
        const std::vector<int64_t> hub{experts, width, h};
        const bool inputMajor = ck.storedShape(p + "experts.down_proj") != std::vector<int64_t>{experts, h, width} || width == h;
        const torch::Tensor gateUp = load(
            "experts.gate_up_proj", inputMajor ? std::vector<int64_t>{experts, h, 2 * width} : std::vector<int64_t>{experts, 2 * width, h});
        const torch::Tensor down = load("experts.down_proj", inputMajor ? hub : std::vector<int64_t>{experts, h, width});
        // Panels are packed from the output-major view ([2I, hidden]); kept matrices are views of the one tensor.
        // The peak is the weights plus one layer's fused tensors.
        w.inputMajor = inputMajor && !panels;
        for (int64_t e = 0; e < experts; ++e) {
            const auto gateUpOf = gateUp.select(0, e), downOf = down.select(0, e);
            if (panels && inputMajor)
                keep(gateUpOf.t(), downOf.t());
            else
                keep(gateUpOf, downOf);
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

    // Every (token, slot) sorted by expert: each expert's tokens are one contiguous run of the order, and no
    // operation touches an idle expert.
    const auto slots = r.experts.flatten();
    const auto order = slots.argsort();
    const auto counts = torch::bincount(slots.cpu(), {}, c.experts); // the one host read per layer
    const auto tokenOf = torch::div(order, k, "floor");
    std::vector<ExpertRun> runs;
    for (int64_t e = 0, start = 0; e < c.experts; ++e) {
        if (const int64_t n = counts.data_ptr<int64_t>()[e]; n > 0) {
            runs.push_back({e, start, n});
            start += n;
        }
    }
    const auto slotWeights = r.weights.flatten().index_select(0, order).to(x.scalar_type()); // [slots], by expert
    auto weightsOf = [&](const ExpertRun& run) { return slotWeights.narrow(0, run.start, run.rows); };
    // One expert's SwiGLU activations on `source`'s rows `tokens` (all of them when undefined). Packed experts go
    // through the few-rows kernel, which gathers the rows as it reads them (BLAS's repacking of each expert's
    // megabytes for its 30-odd rows cost as much as the product); the others are at::linear's.
    auto activations = [&](const ExpertRun& run, const torch::Tensor& source, const torch::Tensor& tokens) {
        const auto e = static_cast<size_t>(run.expert);
        torch::Tensor both;
        if (!w.gateUpPanels.empty()) {
            both = kernels::linearFewRows(source, w.gateUpPanels[e], tokens);
        } else {
            const auto rows = tokens.defined() ? source.index_select(0, tokens) : source;
            both = w.inputMajor ? rows.mm(w.gateUp[e]) : torch::nn::functional::linear(rows, w.gateUp[e]);
        }
        return torch::silu(both.narrow(1, 0, width)) * both.narrow(1, width, width);
    };
    // An unpacked expert's outputs from its activations, weighted by each row's router weight.
    auto weightedOutputs = [&](const ExpertRun& run, const torch::Tensor& act) {
        const auto& down = w.down[static_cast<size_t>(run.expert)];
        return (w.inputMajor ? act.mm(down) : torch::nn::functional::linear(act, down)) * weightsOf(run).unsqueeze(1);
    };
    torch::Tensor out;
    if (!x.device().is_cpu()) {
        // A GPU is bound by launches: the rows gathered once, one GEMM pair per expert, all added back at once.
        const auto rows = flat.index_select(0, tokenOf);
        std::vector<torch::Tensor> parts;
        for (const ExpertRun& run : runs)
            parts.push_back(weightedOutputs(run, activations(run, rows.narrow(0, run.start, run.rows), {})));
        out = parts.empty() ? torch::zeros_like(flat) : torch::zeros_like(flat).index_add_(0, tokenOf, torch::cat(parts));
    } else {
        // A CPU is bound by memory: the experts run side by side, one group per core, each group adding into its
        // own sum, and every temporary is one expert's (hundreds of KB, in cache). Gathering every slot's rows
        // and joining the experts' outputs made three [tokens x k, hidden] tensors instead (65 MB each at 1k
        // tokens of Qwen3.5-35B-A3B), whose fresh pages cost about a fifth of the block. A packed expert's down
        // product is weighted and added at its tokens' rows by the kernel itself. The groups are fixed by the core
        // count, so a run gives the same sums every time.
        const auto groups = groupsByRows(runs, cpuWorkers());
        std::vector<torch::Tensor> sums(groups.size());
        forEachAcrossCores(static_cast<int64_t>(groups.size()), [&](int64_t g) {
            auto sum = torch::zeros_like(flat);
            for (const ExpertRun& run : groups[static_cast<size_t>(g)]) {
                const auto tokens = tokenOf.narrow(0, run.start, run.rows);
                const auto act = activations(run, flat, tokens);
                if (!w.downPanels.empty())
                    kernels::addLinearFewRows(act, w.downPanels[static_cast<size_t>(run.expert)], weightsOf(run), sum, tokens);
                else
                    sum.index_add_(0, tokens, weightedOutputs(run, act));
            }
            sums[static_cast<size_t>(g)] = sum;
        });
        out = sums.empty() ? torch::zeros_like(flat) : sums[0];
        for (size_t g = 1; g < sums.size(); ++g)
            out = out + sums[g];
    }
    if (w.sharedGateUp.defined()) {
        auto shared = swiglu(flat, w.sharedGateUp, w.sharedDown, c.sharedIntermediate);
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

#include "core/model/engine/moe_block.h"

#include "core/model/engine/checkpoint.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/dense.h"
#include "kernels/linear_few_rows.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

namespace ropescope::model {
namespace {

// The experts' gate activation: silu (SwiGLU), or gelu-tanh (Gemma 4).
torch::Tensor gated(const torch::Tensor& both, int64_t width, const MoeConfig& c)
{
    const auto gate = both.narrow(-1, 0, width);
    return (c.geluExperts ? torch::gelu(gate, "tanh") : torch::silu(gate)) * both.narrow(-1, width, width);
}

// The shared expert's SwiGLU, in nn.Linear's layout: gate and up one matrix [2 * width, in] (the gate first).
torch::Tensor swiglu(const torch::Tensor& x, const torch::Tensor& gateUp, const torch::Tensor& down, int64_t width)
{
    const auto both = dense(x, gateUp);
    return dense(torch::silu(both.narrow(-1, 0, width)) * both.narrow(-1, width, width), down);
}

// GLM's choice: sigmoid scores plus the correction bias; only the best `topkGroup` groups (each scored by the
// sum of its two best) stay in the running: the others' scores become -inf, as transformers 5's router fills them
// (Glm4vMoeTextTopkRouter). A fill of 0 would let a dropped group's expert beat a kept one whose biased score is
// negative.
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
    return choice.masked_fill(keep == 0, -std::numeric_limits<double>::infinity());
}

// One expert's tokens: positions [start, start + rows) of the slots sorted by expert.
struct ExpertRun {
    int64_t expert, start, rows;
};

// The shared expert's output on rows x, times its gate where it has one (Qwen3.5: sigmoid(x . gate)): packed
// (the few-rows kernel) or as loaded.
torch::Tensor sharedExpert(const torch::Tensor& x, const SharedExpert& shared, const MoeConfig& c)
{
    const int64_t s = c.sharedIntermediate;
    torch::Tensor out;
    if (const auto* packed = std::get_if<PackedMlp>(&shared.mlp)) {
        const auto both = kernels::linearFewRows(x, packed->gateUp);
        out = kernels::linearFewRows(gated(both, s, c), packed->down);
    } else {
        const LoadedMlp& loaded = std::get<LoadedMlp>(shared.mlp);
        out = swiglu(x, loaded.gateUp, loaded.down, s);
    }
    return shared.gate.defined() ? out * torch::sigmoid(dense(x, shared.gate)) : out;
}

// One pass of the CPU path takes at most this many tokens. Its slot outputs are [tokens x k, hidden] floats (268 MB
// for Qwen3.5-35B-A3B's k 8 and hidden 2048), and each pass reads every expert's weights once: at 4096 tokens an
// expert has about 128 rows, whose products take several times as long as reading its weights.
constexpr int64_t kTokensPerPass = 4096;
// Rows of one work item of the shared expert (and of one call of the sum): small enough that the items left at the
// end of the experts even out the cores' finishing times.
constexpr int64_t kRowsPerItem = 64;

} // namespace

struct MoeWorkspace {
    std::mutex inUse; // held by the forward that uses `kept`
    torch::Tensor kept;
};

std::shared_ptr<MoeWorkspace> makeMoeWorkspace()
{
    return std::make_shared<MoeWorkspace>();
}

namespace {

// Storage for `floats` floats of slot outputs for one forward: the model's workspace, grown if it is smaller
// (the old one freed before the new one is mapped), while this forward holds `lease`; or, without one or while
// another thread's forward uses it, storage of its own. In 2 MB pages where Linux gives them.
torch::Tensor slotStorage(const MoeWeights& w, int64_t floats, std::unique_lock<std::mutex>& lease)
{
    if (w.workspace)
        lease = std::unique_lock<std::mutex>(w.workspace->inUse, std::try_to_lock);
    if (!lease.owns_lock())
        return kernels::fewRowsStorage(floats);
    torch::Tensor& kept = w.workspace->kept;
    if (!kept.defined() || kept.numel() < floats) {
        kept = torch::Tensor();
        kept = kernels::fewRowsStorage(floats);
    }
    return kept.narrow(0, 0, floats);
}

// out[t] = the sum of token t's k slot rows, taken in ascending position (so in ascending expert id, the order in
// which transformers adds them), plus what out[t] holds (the shared expert's row) where `plusOut`.
void sumSlots(const float* slotRows, const int64_t* positions, int64_t k, float* out, int64_t tokens, int64_t hidden, bool plusOut)
{
    const int64_t blocks = (tokens + kRowsPerItem - 1) / kRowsPerItem;
    forEachAcrossCores(blocks, [&](int64_t b) {
        std::vector<float> row(static_cast<size_t>(hidden));
        float* sum = row.data();
        for (int64_t t = b * kRowsPerItem; t < std::min(tokens, (b + 1) * kRowsPerItem); ++t) {
            const int64_t* at = positions + t * k;
            std::copy(slotRows + at[0] * hidden, slotRows + (at[0] + 1) * hidden, sum);
            for (int64_t j = 1; j < k; ++j) {
                const float* slot = slotRows + at[j] * hidden;
                for (int64_t d = 0; d < hidden; ++d)
                    sum[d] += slot[d];
            }
            float* o = out + t * hidden;
            for (int64_t d = 0; d < hidden; ++d)
                o[d] = plusOut ? sum[d] + o[d] : sum[d];
        }
    });
}

// What the checkpoint holds and the config would not use is a different model than the weights: a shared expert
// the config leaves out (its key, e.g. shared_expert_intermediate_size or n_shared_experts, at 0, or a family that
// has none), or the experts in both the per-expert and the fused layout (one would be read and the other ignored).
// storedShape is empty for random weights, which hold only what the config asks for.
void refuseUnusedMoeTensors(const Checkpoint& ck, const std::string& p, const MoeConfig& m)
{
    const std::string where = ck.dir().toStdString() + ": ";
    const MoeNames& names = m.names;
    const std::string shared = p + names.sharedExpert + "gate_proj.weight";
    if (m.sharedIntermediate == 0 && *names.sharedExpert && !ck.storedShape(shared).empty())
        throw BadInputFile(where + "tensor '" + shared + "' is a shared expert, but the config has none (" +
                           (*names.sharedKey ? std::string(names.sharedKey) + " 0" : std::string("its family has none")) +
                           "): the config does not describe these weights");
    if (!ck.storedShape(p + "experts.0.gate_proj.weight").empty() && !ck.storedShape(p + "experts.gate_up_proj").empty())
        throw BadInputFile(where + p +
                           "experts: the checkpoint holds them both per expert (experts.0.gate_proj.weight ...) and fused "
                           "(experts.gate_up_proj); keep one layout");
}

// One layer's tensors by their names under its prefix, each straight to the device and type.
struct LayerTensors {
    const Checkpoint& ck;
    const std::string& prefix;
    torch::Device device;
    torch::Dtype dtype;

    torch::Tensor operator()(const std::string& name, std::vector<int64_t> shape) const
    {
        return ck.tensor(prefix + name, shape).to(device, dtype);
    }
};

// Each expert's matrices in turn, as the checkpoint holds them, to `keep`: per expert, gate and up joined once (one
// GEMM for both per expert on its tokens; the peak is one expert's copy); or qwen3_vl_moe's fused tensors, the Hub's
// [E, hidden, 2I] / [E, I, hidden] (InputMajor) or transformers 5's [E, 2I, hidden] / [E, hidden, I], down_proj's
// shape saying which (when hidden == I both read the same: the Hub's form), each expert a view of them (the peak is
// the weights plus one layer's fused tensors).
void readExperts(const LayerTensors& load, const MoeConfig& m, int64_t h, const std::function<void(LoadedMlp, Orientation)>& keep)
{
    const int64_t experts = m.experts, width = m.intermediate;
    if (load.ck.has(load.prefix + "experts.0.gate_proj.weight")) {
        for (int64_t e = 0; e < experts; ++e) {
            const std::string q = "experts." + std::to_string(e) + ".";
            keep({torch::cat({load(q + "gate_proj.weight", {width, h}), load(q + "up_proj.weight", {width, h})}, 0),
                  load(q + "down_proj.weight", {h, width})},
                 Orientation::OutputMajor);
        }
        return;
    }
    const bool inputMajor = load.ck.storedShape(load.prefix + "experts.down_proj") != std::vector<int64_t>{experts, h, width} || width == h;
    const torch::Tensor gateUp = load(
        "experts.gate_up_proj", inputMajor ? std::vector<int64_t>{experts, h, 2 * width} : std::vector<int64_t>{experts, 2 * width, h});
    const torch::Tensor down =
        load("experts.down_proj", inputMajor ? std::vector<int64_t>{experts, width, h} : std::vector<int64_t>{experts, h, width});
    for (int64_t e = 0; e < experts; ++e)
        keep({gateUp.select(0, e), down.select(0, e)}, inputMajor ? Orientation::InputMajor : Orientation::OutputMajor);
}

// The experts packed into the few-rows kernel's panels (a copy the size of the expert, made one expert at a time), all
// of a layer's in one storage of large pages (fewRowsStorage); panels are packed from the output-major view.
PackedExperts packedExperts(const LayerTensors& load, const MoeConfig& m, int64_t h)
{
    const int64_t gateUpFloats = kernels::fewRowsPanelFloats(2 * m.intermediate, h),
                  downFloats = kernels::fewRowsPanelFloats(h, m.intermediate);
    const torch::Tensor storage = kernels::fewRowsStorage(m.experts * (gateUpFloats + downFloats));
    PackedExperts packed;
    readExperts(load, m, h, [&](LoadedMlp e, Orientation orientation) {
        if (orientation == Orientation::InputMajor)
            e = {e.gateUp.t(), e.down.t()};
        const int64_t at = static_cast<int64_t>(packed.experts.size()) * (gateUpFloats + downFloats);
        packed.experts.push_back({kernels::packFewRowsWeight(e.gateUp, storage.narrow(0, at, gateUpFloats)),
                                  kernels::packFewRowsWeight(e.down, storage.narrow(0, at + gateUpFloats, downFloats))});
    });
    return packed;
}

// The shared expert by the family's names, packed too where the experts are (on the CPU it runs beside them, in
// blocks of rows: moeForward); none where the config has none.
std::optional<SharedExpert> sharedExpertOf(const LayerTensors& load, const MoeConfig& m, int64_t h, bool packed)
{
    if (m.sharedIntermediate == 0)
        return std::nullopt;
    const int64_t s = m.sharedIntermediate;
    const std::string q = m.names.sharedExpert;
    LoadedMlp mlp{torch::cat({load(q + "gate_proj.weight", {s, h}), load(q + "up_proj.weight", {s, h})}, 0),
                  load(q + "down_proj.weight", {h, s})};
    SharedExpert shared{mlp, {}};
    if (packed)
        shared.mlp = PackedMlp{kernels::packFewRowsWeight(mlp.gateUp), kernels::packFewRowsWeight(mlp.down)};
    if (m.sharedExpertGate)
        shared.gate = load(m.names.sharedGate, {1, h});
    return shared;
}

} // namespace

MoeWeights loadMoeWeights(const Checkpoint& ck, const std::string& p, const TextConfig& t, torch::Device device, torch::Dtype dtype)
{
    const MoeConfig& m = t.moe;
    const int64_t h = t.hidden;
    const LayerTensors load{ck, p, device, dtype};
    refuseUnusedMoeTensors(ck, p, m);
    MoeWeights w;
    // The router's weights are checked as loaded (they are small): an infinity in them saturates the softmax or
    // sigmoid and changes which experts run without a NaN ever reaching the logits.
    auto finite = [&](const torch::Tensor& loaded, const std::string& name) {
        if (!torch::isfinite(loaded).all().item<bool>())
            throw BadInputFile(ck.dir().toStdString() + ": tensor '" + p + name + "' holds NaN or infinite values");
        return loaded;
    };
    w.router = finite(load(m.names.router, {m.experts, h}), m.names.router);
    if (*m.names.routerScale) {
        w.routerScale = finite(load(m.names.routerScale, {h}), m.names.routerScale);
        w.expertScale = finite(ck.tensor(p + m.names.expertScale, {m.experts}).to(device, torch::kFloat32), m.names.expertScale);
    }
    if (*m.names.correctionBias) // the choice is made in float32 (transformers' router casts)
        w.correctionBias = finite(ck.tensor(p + m.names.correctionBias, {m.experts}).to(device, torch::kFloat32), m.names.correctionBias);
    // A CPU that runs the few-rows kernel gets each expert packed into its panels; elsewhere the matrices are kept
    // as loaded.
    const bool packed = device.is_cpu() && dtype == torch::kFloat32 && kernels::linearFewRowsAvailable();
    if (packed) {
        w.experts = packedExperts(load, m, h);
    } else {
        LoadedExperts loaded;
        readExperts(load, m, h, [&](LoadedMlp e, Orientation orientation) {
            loaded.experts.push_back(std::move(e));
            loaded.orientation = orientation;
        });
        w.experts = std::move(loaded);
    }
    w.shared = sharedExpertOf(load, m, h, packed);
    return w;
}

RouterTrace routeTokens(const torch::Tensor& x, const MoeWeights& w, const MoeConfig& c)
{
    RouterTrace r;
    if (c.router == RouterKind::GemmaScaled) {
        // transformers' Gemma4TextRouter: a weightless RMSNorm in float32 (back to x's dtype), x scale / sqrt(hidden),
        // proj; softmax in float32, top-k renormalised, times each chosen expert's per_expert_scale. The trace keeps
        // the logits (proj's output), as the fixtures record them.
        const auto xf = x.to(torch::kFloat32);
        const auto normed = (xf * torch::pow(xf.pow(2).mean(-1, true) + c.routerNormEps, -0.5)).to(x.scalar_type());
        r.scores = torch::nn::functional::linear(normed * w.routerScale * (1.0 / std::sqrt(static_cast<double>(x.size(-1)))), w.router);
        std::tie(r.weights, r.experts) = torch::softmax(r.scores, -1, torch::kFloat32).topk(c.topK, -1);
        r.weights = r.weights / r.weights.sum(-1, true) * w.expertScale.index_select(0, r.experts.flatten()).view_as(r.weights);
        return r;
    }
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

namespace {

// Slot (token i, choice j) is i * k + j; `positions` sorts the slots by expert (slots[positions[p]]).
// Each expert with tokens as one run of that order.
std::vector<ExpertRun> expertRuns(const torch::Tensor& slotExperts, int64_t experts)
{
    const auto counts = torch::bincount(slotExperts.cpu(), {}, experts); // the one host read per layer
    const int64_t* count = counts.data_ptr<int64_t>();
    std::vector<ExpertRun> runs;
    for (int64_t e = 0, start = 0; e < experts; ++e) {
        if (count[e] > 0) {
            runs.push_back({e, start, count[e]});
            start += count[e];
        }
    }
    return runs;
}

// x times a loaded matrix in its orientation.
torch::Tensor product(const torch::Tensor& x, const torch::Tensor& w, Orientation orientation)
{
    return orientation == Orientation::InputMajor ? x.mm(w) : torch::nn::functional::linear(x, w);
}

// One expert's SwiGLU activations on x's rows `tokens` (all of them when undefined). Packed experts go through the
// few-rows kernel, which gathers the rows as it reads them (BLAS's repacking of each expert's megabytes for its
// 30-odd rows cost as much as the product); loaded ones are at::linear's (or x @ w, input-major).
torch::Tensor activations(const ExpertRun& run, const torch::Tensor& x, const torch::Tensor& tokens, const MoeWeights& w,
                          const MoeConfig& c)
{
    const auto e = static_cast<size_t>(run.expert);
    const int64_t width = c.intermediate;
    torch::Tensor both;
    if (const auto* packed = std::get_if<PackedExperts>(&w.experts)) {
        both = kernels::linearFewRows(x, packed->experts[e].gateUp, tokens);
    } else {
        const LoadedExperts& loaded = std::get<LoadedExperts>(w.experts);
        both = product(tokens.defined() ? x.index_select(0, tokens) : x, loaded.experts[e].gateUp, loaded.orientation);
    }
    return gated(both, width, c);
}

// An expert's outputs from its activations (unweighted).
torch::Tensor expertDown(const ExpertRun& run, const torch::Tensor& act, const MoeWeights& w)
{
    const auto e = static_cast<size_t>(run.expert);
    if (const auto* packed = std::get_if<PackedExperts>(&w.experts))
        return kernels::linearFewRows(act, packed->experts[e].down);
    const LoadedExperts& loaded = std::get<LoadedExperts>(w.experts);
    return product(act, loaded.experts[e].down, loaded.orientation);
}

// A GPU's way, and the one autograd can follow: every slot's row gathered once, one GEMM pair per expert, all
// weighted and added back with one index_add_ (a GPU is bound by launches). The experts run one after another.
torch::Tensor expertsAtOnce(const torch::Tensor& flat, const RouterTrace& r, const MoeWeights& w, const MoeConfig& c)
{
    const auto slotExperts = r.experts.flatten();
    const auto positions = slotExperts.argsort();
    const auto tokenOf = torch::div(positions, c.topK, "floor");
    const auto slotWeights = r.weights.flatten().index_select(0, positions).to(flat.scalar_type());
    const auto rows = flat.index_select(0, tokenOf);
    std::vector<torch::Tensor> parts;
    for (const ExpertRun& run : expertRuns(slotExperts, c.experts)) {
        const auto act = activations(run, rows.narrow(0, run.start, run.rows), {}, w, c);
        parts.push_back(expertDown(run, act, w) * slotWeights.narrow(0, run.start, run.rows).unsqueeze(1));
    }
    auto out = parts.empty() ? torch::zeros_like(flat) : torch::zeros_like(flat).index_add_(0, tokenOf, torch::cat(parts));
    return w.shared ? out + sharedExpert(flat, *w.shared, c) : out;
}

// A CPU's way for one pass of tokens, written to `out` [tokens, hidden] (float32, rows contiguous). Each expert
// with tokens, and each block of rows of the shared expert, is one work item, and the cores take items as they
// finish their last: the experts by rows, most first, then the shared expert's blocks, which even out the cores'
// finishing times (fixed groups of experts, one per core, had finished far apart: a core shares its time with
// OpenBLAS's spinning worker, and rows are not time; docs/SPEED.md). An expert writes its weighted outputs
// to its own rows of the slot outputs, and each token's row is summed from them in a fixed order afterwards, so
// the order of the sums does not depend on which core ran what, nor on how many cores there are. Every temporary is one expert's
// (hundreds of KB, in cache).
void expertsOnCores(const torch::Tensor& flat, const torch::Tensor& experts, const torch::Tensor& weights, const MoeWeights& w,
                    const MoeConfig& c, const torch::Tensor& out, const torch::Tensor& storage)
{
    const int64_t tokens = flat.size(0), hidden = flat.size(1), k = c.topK, slots = tokens * k;
    const auto slotExperts = experts.flatten();
    const auto positions = slotExperts.argsort();
    const auto tokenOf = torch::div(positions, k, "floor");
    const auto slotWeights = weights.flatten().index_select(0, positions).to(torch::kFloat32).contiguous();
    std::vector<ExpertRun> runs = expertRuns(slotExperts, c.experts);
    std::stable_sort(runs.begin(), runs.end(), [](const ExpertRun& a, const ExpertRun& b) { return a.rows > b.rows; });
    const bool shared = w.shared.has_value();
    const int64_t sharedItems = shared ? (tokens + kRowsPerItem - 1) / kRowsPerItem : 0;

    const auto slotRows = storage.narrow(0, 0, slots * hidden).view({slots, hidden});
    forEachAcrossCores(static_cast<int64_t>(runs.size()) + sharedItems, [&](int64_t item) {
        if (item < static_cast<int64_t>(runs.size())) {
            const ExpertRun& run = runs[static_cast<size_t>(item)];
            const auto act = activations(run, flat, tokenOf.narrow(0, run.start, run.rows), w, c);
            const auto into = slotRows.narrow(0, run.start, run.rows);
            const auto weight = slotWeights.narrow(0, run.start, run.rows);
            if (const auto* packed = std::get_if<PackedExperts>(&w.experts))
                kernels::linearFewRowsInto(act, packed->experts[static_cast<size_t>(run.expert)].down, into, weight);
            else
                into.copy_(expertDown(run, act, w) * weight.unsqueeze(1));
            return;
        }
        // The shared expert's rows go to `out` itself; the sum adds the slots before them.
        const int64_t first = (item - static_cast<int64_t>(runs.size())) * kRowsPerItem, rows = std::min(kRowsPerItem, tokens - first);
        out.narrow(0, first, rows).copy_(sharedExpert(flat.narrow(0, first, rows), *w.shared, c));
    });

    // Each token's slots, by position: walking the sorted order, a token meets its slots in ascending expert id.
    std::vector<int64_t> byToken(static_cast<size_t>(slots)), filled(static_cast<size_t>(tokens), 0);
    const int64_t* tokenAt = tokenOf.data_ptr<int64_t>();
    for (int64_t p = 0; p < slots; ++p) {
        const auto t = static_cast<size_t>(tokenAt[p]);
        byToken[t * static_cast<size_t>(k) + static_cast<size_t>(filled[t]++)] = p;
    }
    sumSlots(slotRows.data_ptr<float>(), byToken.data(), k, out.data_ptr<float>(), tokens, hidden, shared);
}

} // namespace

torch::Tensor moeForward(const torch::Tensor& x, const MoeWeights& w, const MoeConfig& c, RouterTrace* trace, const torch::Tensor& routeOn)
{
    const auto lead = x.sizes().slice(0, x.dim() - 1).vec();
    const int64_t hidden = x.size(-1);
    const auto flat = x.reshape({-1, hidden}).contiguous();
    const RouterTrace r = routeTokens(routeOn.defined() ? routeOn.reshape({-1, hidden}) : flat, w, c);
    torch::Tensor out;
    if (x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && !(torch::GradMode::is_enabled() && x.requires_grad())) {
        out = torch::empty_like(flat);
        std::unique_lock<std::mutex> lease;
        const auto storage = slotStorage(w, std::min(kTokensPerPass, flat.size(0)) * c.topK * hidden, lease);
        for (int64_t first = 0; first < flat.size(0); first += kTokensPerPass) {
            const int64_t count = std::min(kTokensPerPass, flat.size(0) - first);
            expertsOnCores(flat.narrow(0, first, count), r.experts.narrow(0, first, count), r.weights.narrow(0, first, count), w, c,
                           out.narrow(0, first, count), storage);
        }
    } else {
        out = expertsAtOnce(flat, r, w, c);
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

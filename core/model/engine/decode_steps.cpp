#include "core/model/engine/decode_steps.h"

#include "core/model/engine/cuda_graph.h"

#include <torch/types.h>

#include <cstdlib>
#include <cstring>
#include <map>

namespace ropescope::model {

namespace {

bool fixedCacheWanted()
{
    const char* env = std::getenv("ROPESCOPE_DECODE_CACHE");
    return !(env && std::strcmp(env, "growing") == 0);
}

} // namespace

DecodeSteps::DecodeSteps(const LanguageModel& model, const TextConfig& text, KvCache& cache, int64_t steps, const DecoderCapture& capture)
    : model_(model), cache_(cache), steps_(steps), capture_(capture), fixed_(fixedCacheWanted()),
      // An MoE layer sizes its expert groups from counts read back to the host: no graph can hold that.
      graphs_(fixed_ && !text.moe.any() && CudaGraph::available(model.lmHead().device()))
{ }

DecodeSteps::~DecodeSteps() = default;

bool DecodeSteps::graphed() const
{
    return graph_ && graph_->captured();
}

void DecodeSteps::setUp(const std::vector<LayerRotary>& rotary)
{
    cache_.makeFixed(cache_.tokens + steps_);
    ids_ = torch::zeros({1}, cache_.slot.options());
    // Rows against every column would take the slots not yet written too: the prompt's columns, unless chosen.
    auto& cols = capture_.selection.cols;
    if (!capture_.layers.empty() && (!cols.defined() || cols.numel() == 0))
        cols = torch::arange(cache_.tokens, cache_.slot.options());
    // The tables in the activations' dtype, so the decoder uses the buffers as they are (it casts others).
    const auto dtype = model_.lmHead().scalar_type();
    std::map<const void*, size_t> seen; // layers share a table's tensors: one buffer per table
    rotary_.resize(rotary.size());
    for (size_t i = 0; i < rotary.size(); ++i) {
        if (!rotary[i].cos.defined())
            continue;
        const auto [it, added] = seen.try_emplace(rotary[i].cos.data_ptr(), distinct_.size());
        if (added) {
            distinct_.push_back({rotary[i].cos.to(dtype, false, true), rotary[i].sin.to(dtype, false, true)});
            firstLayerOf_.push_back(i);
        }
        rotary_[i] = distinct_[it->second];
    }
    // The DeltaNet states get buffers of their own, updated in place by each step (the prompt's pass may
    // have handed its own tensors to its output).
    states_.resize(cache_.deltaNet.size());
    for (size_t i = 0; i < states_.size(); ++i)
        if (cache_.deltaNet[i].recurrent.defined()) {
            states_[i] = {cache_.deltaNet[i].conv.clone(), cache_.deltaNet[i].recurrent.clone()};
            cache_.deltaNet[i] = states_[i];
        }
    if (graphs_)
        graph_ = std::make_unique<CudaGraph>();
}

void DecodeSteps::runStep()
{
    const GemmaInputs gemma{{}, ids_}; // the per-layer inputs' ids (Gemma E2B / E4B); generated tokens are text
    DecoderOutput out = model_.forward(model_.embedInRange(ids_), rotary_, &cache_, capture_, nullptr, &gemma);
    logits_ = out.logits;
    attentions_ = std::move(out.attentions);
    for (size_t i = 0; i < states_.size(); ++i)
        if (states_[i].recurrent.defined()) {
            states_[i].conv.copy_(cache_.deltaNet[i].conv);
            states_[i].recurrent.copy_(cache_.deltaNet[i].recurrent);
            cache_.deltaNet[i] = states_[i];
        }
}

at::Tensor DecodeSteps::step(const at::Tensor& next, const std::vector<LayerRotary>& rotary, std::vector<at::Tensor>* attentions)
{
    if (!fixed_) {
        const GemmaInputs gemma{{}, next.reshape({1})};
        const auto out = model_.forward(model_.embedInRange(next.reshape({1})), rotary, &cache_, capture_, nullptr, &gemma);
        if (attentions)
            *attentions = out.attentions;
        return out.logits[0];
    }
    if (calls_ == 0)
        setUp(rotary);
    if (cache_.tokens >= cache_.slots.size(0))
        throw ModelError("decoding: more steps than the " + std::to_string(steps_) + " the cache was made for");
    ids_.copy_(next.reshape({1}));
    for (size_t b = 0; b < distinct_.size(); ++b) {
        distinct_[b].cos.copy_(rotary[firstLayerOf_[b]].cos);
        distinct_[b].sin.copy_(rotary[firstLayerOf_[b]].sin);
    }
    const int64_t position = cache_.tokens;
    cache_.slot.fill_(position);
    torch::Tensor logits;
    std::vector<torch::Tensor> rows;
    if (graphed()) {
        graph_->replay();
        logits = logits_;
        rows = attentions_;
    } else if (graph_ && calls_ > 0) {
        // The second step: the first ran on the current stream and initialised what it needs there; this one
        // runs on the capture's stream, then is captured for the steps after it.
        int runs = 0;
        const bool captured = graph_->runAndCapture(
            [&] {
                runStep();
                if (runs++ == 0) {
                    logits = logits_;
                    rows = attentions_;
                }
            },
            graphFailure_);
        if (!captured) {
            graph_.reset();
            for (size_t i = 0; i < states_.size(); ++i) // a failed capture may have left its own tensors there
                if (states_[i].recurrent.defined())
                    cache_.deltaNet[i] = states_[i];
        }
    } else {
        runStep();
        logits = logits_;
        rows = attentions_;
    }
    cache_.tokens = position + 1;
    ++calls_;
    // A graph's outputs are overwritten by its next replay: the caller gets copies.
    if (attentions)
        for (const torch::Tensor& a : rows)
            attentions->push_back(a.clone());
    return logits[0].clone();
}

} // namespace ropescope::model

#pragma once
// Greedy decoding after a prompt's pass: one token per step through the decoder, each step's logits (and its
// row of the captured layers' attention) back. The KV cache is made fixed (its capacity the prompt plus every
// step) and the step's inputs live in buffers of their own, so every step has the same shapes and addresses; on
// a GPU the step is then captured once as a CUDA graph and replayed (cuda_graph.h), which is what makes a step
// cost its kernels rather than its ~2,000 operator dispatches. An MoE decoder on a GPU runs its steps one
// operator at a time (its router reads the expert counts back to the host). ROPESCOPE_DECODE_CACHE=growing
// keeps the cache that grows by concatenation (for debugging, and the test that compares the two).
#include "core/model/engine/language_model.h"

#include <memory>
#include <string>

namespace ropescope::model {

class CudaGraph;

class DecodeSteps {
public:
    // `cache` holds the prompt; at most `steps` tokens follow. `capture` is what each step keeps: its row of the
    // captured layers' attention (layers and columns, the prompt's when none are chosen; rows and the other
    // traces are not taken).
    DecodeSteps(const LanguageModel& model, const TextConfig& text, KvCache& cache, int64_t steps, const DecoderCapture& capture);
    ~DecodeSteps();
    DecodeSteps(const DecodeSteps&) = delete;
    DecodeSteps& operator=(const DecodeSteps&) = delete;

    // Feeds token `next` (an int64 scalar on the model's device, in the vocabulary) at these rotary tables and
    // returns the logits [vocab] (a tensor of its own). `attentions` receives the captured layers' rows.
    at::Tensor step(const at::Tensor& next, const std::vector<LayerRotary>& rotary, std::vector<at::Tensor>* attentions = nullptr);

    bool fixedShapes() const { return fixed_; }
    // Whether steps replay a CUDA graph, and if a capture was tried and failed, why.
    bool graphed() const;
    const std::string& graphFailure() const { return graphFailure_; }

private:
    void setUp(const std::vector<LayerRotary>& rotary);
    void runStep(); // the decoder on the step buffers (what the graph captures)

    const LanguageModel& model_;
    KvCache& cache_;
    int64_t steps_;
    DecoderCapture capture_;
    bool fixed_;
    bool graphs_;
    int calls_ = 0;
    at::Tensor ids_;                     // [1] int64: the token fed
    std::vector<LayerRotary> rotary_;    // per layer; layers that share a table share its buffers
    std::vector<LayerRotary> distinct_;  // those buffers once each...
    std::vector<size_t> firstLayerOf_;   // ...and the layer whose table fills each
    std::vector<DeltaNetState> states_;  // the DeltaNet layers' state, updated in place (graphs)
    at::Tensor logits_;                  // [1, vocab]: the last step's
    std::vector<at::Tensor> attentions_; // its captured rows
    std::unique_ptr<CudaGraph> graph_;
    std::string graphFailure_;
};

} // namespace ropescope::model

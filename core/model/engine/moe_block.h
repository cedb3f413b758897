#pragma once
// One mixture-of-experts MLP, as the MoE members run it (qwen3_5_moe, qwen3_vl_moe, glm4v_moe; the router kinds
// and settings are MoeConfig's): route each token to its top-k experts, run each expert that has tokens once on
// all of them (one gate+up GEMM and one down GEMM), add the results weighted, and add the shared expert.
#include "core/model/engine/model_config.h"
#include "kernels/linear_few_rows.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ropescope::model {

class Checkpoint;

// Which experts a layer's router chose for each token, in transformers' terms (the fixtures' names):
// Softmax router: `scores` the probabilities [tokens, E], `experts` by descending probability;
// SigmoidGrouped: `scores` the logits before the sigmoid [tokens, E], `experts` in ascending expert id.
// `weights` [tokens, k] are what each chosen expert's output is multiplied by (renormalised, scaled), in
// `experts`' order. Tokens are the pass's rows ([L, ...] for one sequence, [B, L, ...] for a batch).
struct RouterTrace {
    int layer = 0;
    at::Tensor scores, experts, weights;
};

// Float32 storage for the CPU path's slot outputs (up to 4,096 tokens x k x hidden floats: hundreds of MB at the
// real shapes), one for all the sparse layers of a model (a forward's layers all ask the same size), kept from one
// layer and one forward to the next and freed with the model (fresh pages of that size, zeroed by the kernel on
// first touch, would cost every layer again). A forward that finds it in use by another thread allocates its own.
struct MoeWorkspace;
std::shared_ptr<MoeWorkspace> makeMoeWorkspace();

// One SwiGLU: gate and up in one matrix (the first `width` outputs are the gate), then down.
// As loaded: OutputMajor is nn.Linear's [2I, hidden] and [hidden, I] (y = x w^T); InputMajor is the Hub's fused
// qwen3_vl_moe form, [hidden, 2I] and [I, hidden] (y = x w), views of the one fused tensor.
enum class Orientation { OutputMajor, InputMajor };
struct LoadedMlp {
    at::Tensor gateUp, down;
};
// Packed into the few-rows kernel's panels (a CPU that runs it, float32), from either orientation.
struct PackedMlp {
    kernels::FewRowsWeight gateUp, down;
};

// A layer's routed experts in one of two states, chosen once at load for all of them:
struct LoadedExperts { // as the checkpoint holds them (per-expert tensors joined once at load, or the fused tensors' views)
    std::vector<LoadedMlp> experts;
    Orientation orientation = Orientation::OutputMajor;
};
struct PackedExperts { // each expert packed at load, all of a layer's in one storage of large pages
    std::vector<PackedMlp> experts;
};

// The shared expert (Qwen3.5, GLM-4.5V), loaded or packed as the experts are, and its gate where it has one.
struct SharedExpert {
    std::variant<LoadedMlp, PackedMlp> mlp;
    at::Tensor gate; // [1, hidden], Qwen3.5: the output times sigmoid(x . gate); undefined: ungated (GLM)
};

// A sparse layer's weights, held as the checkpoint stores them where they can run so: loading copies nothing it
// need not (the per-expert form of qwen3_5_moe and glm4v_moe; the Hub's fused qwen3_vl_moe tensors [E, hidden, 2I]
// and [E, I, hidden], or transformers 5's in-memory form of them, [E, 2I, hidden] and [E, hidden, I], told apart by
// down_proj's shape). On a CPU that runs the few-rows kernel, in float32, every expert and the shared expert are
// packed instead.
struct MoeWeights {
    at::Tensor router;                   // [E, hidden]
    at::Tensor correctionBias;           // [E], GLM: added to the scores that choose, never to the weights; undefined: none
    at::Tensor routerScale, expertScale; // Gemma 4: [hidden] on the router's normed input, [E] on the chosen weights
    std::variant<LoadedExperts, PackedExperts> experts;
    std::optional<SharedExpert> shared;      // none: a mixture without a shared expert (Qwen3-VL-MoE, or a config's 0)
    std::shared_ptr<MoeWorkspace> workspace; // the model's (LanguageModel shares one); none: each forward its own

    bool defined() const { return router.defined(); }
    bool packed() const { return std::holds_alternative<PackedExperts>(experts); }
};

// Reads layer `prefix` ("model.layers.{i}.mlp.") of a MoE checkpoint by the family's names (MoeConfig::names),
// each tensor straight to `device` and `dtype` (one float32 tensor at a time on the host). Missing tensors or wrong
// shapes: BadInputFile naming them.
MoeWeights loadMoeWeights(const Checkpoint& checkpoint, const std::string& prefix, const TextConfig& text, c10::Device device,
                          c10::ScalarType dtype);

// The router alone: chosen experts [N, k] and their weights [N, k] (float32) for tokens x [N, hidden].
RouterTrace routeTokens(const at::Tensor& x, const MoeWeights& w, const MoeConfig& config);

// The block's output for x [..., hidden] (same shape). Tokens are grouped by expert (sorted once), so each
// expert with tokens costs one GEMM pair on exactly its tokens: no loop over idle experts, no [tokens, E, hidden]
// tensor. On a CPU in float32 (with no graph to record) the experts and the shared expert's row blocks run across
// the cores, and the experts' sums are taken in a fixed order, whichever core ran which. With `trace`, the router's choice (shaped
// like x's leading dims).
// `routeOn` (same shape as x), when given, is what the router reads instead of x (Gemma 4 routes on the residual
// stream and runs the experts on its own norm of it).
at::Tensor moeForward(const at::Tensor& x, const MoeWeights& w, const MoeConfig& config, RouterTrace* trace = nullptr,
                      const at::Tensor& routeOn = {});

} // namespace ropescope::model

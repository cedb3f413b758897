#pragma once
#include "checkpoint.h"

#include <torch/torch.h>

#include <vector>

namespace ropescope::model {

// Intermediate tensors of one vision pass, for parity checks against reference implementations.
struct VisionTrace {
    torch::Tensor patchEmbeds;   // [N, width]
    torch::Tensor rotaryFreqs;   // [N, head_dim/2], input row order
    std::vector<torch::Tensor> blockOutputs; // Qwen2.5-VL: window-permuted row order, as Hugging Face
    torch::Tensor cuSeqlens;     // per-image boundaries (patches)
    torch::Tensor windowIndex;   // Qwen2.5-VL: merged-unit permutation
    torch::Tensor cuWindowSeqlens;
};

// The vision encoder and patch merger of Qwen2-VL (LayerNorm, QuickGELU MLP, full attention per image)
// and Qwen2.5-VL (RMSNorm, gated SiLU MLP, window attention with full-attention blocks), with the 2-D
// (h, w) vision rotary. Input: patch-flattened pixels [N, C*T*P*P] in the processor's row order and the
// (t, h, w) patch grid of each image. Output: one embedding per merged token [N / merge^2, hidden].
class VisionTower {
public:
    VisionTower(const Checkpoint& checkpoint, torch::Device device, torch::Dtype dtype = torch::kFloat32);
    torch::Tensor forward(const torch::Tensor& pixels, const torch::Tensor& gridThw, VisionTrace* trace = nullptr) const;

    // Every weight under its checkpoint name with its checkpoint shape (training, saving).
    struct NamedWeight {
        std::string name;
        torch::Tensor* tensor;
        std::vector<int64_t> shape;
    };
    std::vector<NamedWeight> weights();

private:
    struct Block {
        torch::Tensor norm1W, norm1B, norm2W, norm2B;
        torch::Tensor qkvW, qkvB, projW, projB;
        torch::Tensor fc1W, fc1B, fc2W, fc2B;           // Qwen2-VL
        torch::Tensor gateW, gateB, upW, upB, downW, downB; // Qwen2.5-VL
    };
    torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) const;
    torch::Tensor mlp(const Block& b, const torch::Tensor& x) const;
    torch::Tensor attend(const Block& b, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const std::vector<int64_t>& boundaries) const;
    torch::Tensor rotaryFreqs(const torch::Tensor& gridThw) const;
    void windowIndex(const torch::Tensor& gridThw, torch::Tensor& index, std::vector<int64_t>& boundaries) const;

    VisionConfig cfg_;
    bool qwen25_ = false;
    torch::Device device_;
    torch::Tensor patchW_; // [width, C*T*P*P]
    std::vector<Block> blocks_;
    torch::Tensor mergerNormW_, mergerNormB_, mergerFc1W_, mergerFc1B_, mergerFc2W_, mergerFc2B_;
};

} // namespace ropescope::model

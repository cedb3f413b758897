#pragma once
#include "core/model/engine/checkpoint.h"

#include <torch/torch.h>

#include <vector>

namespace ropescope::model {

// Intermediate tensors of one vision pass, for parity checks against reference implementations.
struct VisionTrace {
    torch::Tensor patchEmbeds;               // [N, width], the patch projection (before Qwen3-VL's position table is added)
    torch::Tensor rotaryFreqs;               // [N, head_dim/2], input row order
    std::vector<torch::Tensor> blockOutputs; // Qwen2.5-VL: window-permuted row order, as Hugging Face
    torch::Tensor cuSeqlens;                 // per-image boundaries (patches)
    torch::Tensor windowIndex;               // Qwen2.5-VL: merged-unit permutation
    torch::Tensor cuWindowSeqlens;
    // GLM-V: the post-conv RMSNorm, the bicubic position table and its sum with the patches, each row's
    // (h, w) in its grid, the post-layernorm and the 2x2 downsample.
    torch::Tensor postConvNorm, positionEmbeds, embeddings, positionH, positionW, postLayernorm, downsample;
    // PaddleOCR-VL: the projector's pre-norm and its 2x2 raster merge (also positionEmbeds, embeddings,
    // postLayernorm above).
    torch::Tensor projectorPreNorm, projectorMerged;
};

// What the vision tower hands the decoder: one embedding per merged token [M, hidden], and for Qwen3-VL
// the DeepStack features [M, hidden] of the listed vision blocks, added after decoder layers 0, 1, ...
struct VisionFeatures {
    torch::Tensor embeds;
    std::vector<torch::Tensor> deepstack;
};

// The vision encoder and patch merger of Qwen2-VL (LayerNorm, QuickGELU MLP, full attention per image),
// Qwen2.5-VL (RMSNorm, gated SiLU MLP, window attention with full-attention blocks) and Qwen3-VL
// (LayerNorm, gelu-tanh MLP, a biased patch projection plus a learned position table resampled to each
// image, DeepStack mergers), GLM-V (RMSNorms, a learned position table resampled bicubically, a 2x2
// Conv2d downsample and a gated merger) and PaddleOCR-VL's SigLIP-NaViT (patches in raster order, a table
// resized bilinearly, a projector that merges 2x2 patches), all with the 2-D (h, w) vision rotary. Input: patch-flattened pixels
// [N, C*T*P*P] in the processor's row order and the (t, h, w) patch grid of each image.
class VisionTower {
public:
    VisionTower(const Checkpoint& checkpoint, torch::Device device, torch::Dtype dtype = torch::kFloat32);
    VisionFeatures forward(const torch::Tensor& pixels, const torch::Tensor& gridThw, VisionTrace* trace = nullptr) const;

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
        torch::Tensor fc1W, fc1B, fc2W, fc2B;               // Qwen2-VL, Qwen3-VL
        torch::Tensor gateW, gateB, upW, upB, downW, downB; // Qwen2.5-VL
    };
    // Each block tensor once: its name under visual.blocks.{i}., where it lives and its shape, for this
    // architecture (Qwen2.5-VL: RMSNorm without bias and a gated MLP; the others: LayerNorm and fc1/fc2).
    struct BlockTensor {
        std::string name;
        torch::Tensor Block::*member;
        std::vector<int64_t> shape;
    };
    std::vector<BlockTensor> blockTensors() const;
    // Norm, then merge_size^2 neighbouring patches into one row, then fc1 -> GELU -> fc2. The DeepStack
    // mergers normalise after the merge (over the wide row), the main merger before it.
    struct Merger {
        std::string prefix;
        bool normAfterMerge = false;
        torch::Tensor normW, normB, fc1W, fc1B, fc2W, fc2B;
    };
    struct MergerTensor {
        std::string name; // after the merger's prefix
        torch::Tensor Merger::*member;
        std::vector<int64_t> shape;
    };
    // The one list of a merger's tensors: loading and weights() both walk it.
    std::vector<MergerTensor> mergerTensors(bool normAfterMerge) const;
    Merger loadMerger(const Checkpoint& ck, const std::string& prefix, bool normAfterMerge, torch::Dtype dtype) const;
    torch::Tensor merge(const Merger& m, const torch::Tensor& x) const;
    torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) const;
    torch::Tensor mlp(const Block& b, const torch::Tensor& x) const;
    torch::Tensor learnedPositions(const std::vector<int64_t>& grids) const;
    // Each patch's (h, w) in its image's or frame's patch grid, in the processor's merge-window row order [N, 2].
    torch::Tensor patchCoordinates(const std::vector<int64_t>& grids) const;

    // GLM-V (vision_tower_glm.cpp): its own tensors, the table resampled as F.grid_sample(bicubic,
    // align_corners=False, border) does for each grid, and the head after the blocks.
    struct GlmHead {
        torch::Tensor postConvNormW, postNormW;
        torch::Tensor downsampleW, downsampleB; // [out, width * merge^2] (the Conv2d as a matmul), [out]
        torch::Tensor projW, normW, normB, gateW, upW, downW;
    };
    struct GlmTensor {
        const char* name;
        torch::Tensor GlmHead::*member;
        std::vector<int64_t> shape;
    };
    std::vector<GlmTensor> glmTensors() const;
    void loadGlm(const Checkpoint& ck, torch::Dtype dtype);
    torch::Tensor bicubicPositions(const torch::Tensor& coordinates, const std::vector<int64_t>& grids) const;
    torch::Tensor glmMerge(const torch::Tensor& x, VisionTrace* trace) const;

    // PaddleOCR-VL (vision_tower_siglip.cpp): its tensors (q, k and v loaded into the blocks' fused qkv), the
    // table resized as F.interpolate(bilinear, align_corners=False) does per image, and the projector.
    struct SiglipHead {
        torch::Tensor postNormW, postNormB, preNormW, preNormB, linear1W, linear1B, linear2W, linear2B;
    };
    void loadSiglip(const Checkpoint& ck, torch::Dtype dtype);
    torch::Tensor bilinearPositions(const std::vector<int64_t>& grids) const;
    torch::Tensor siglipProject(const torch::Tensor& x, const std::vector<int64_t>& grids, VisionTrace* trace) const;
    // Attention is block-diagonal (per image, frame or window). Blocks of one length form a group that
    // goes through one batched attention call.
    struct BlockGroup {
        int64_t length = 0, count = 0;
        torch::Tensor tokens;       // the group's token indices, block after block
        bool wholeSequence = false; // the group is every token, in order: no gather or scatter needed
    };
    std::vector<BlockGroup> groupBlocks(const std::vector<int64_t>& boundaries, int64_t tokens) const;
    torch::Tensor attend(const Block& b, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                         const std::vector<BlockGroup>& groups) const;
    torch::Tensor rotaryFreqs(const torch::Tensor& gridThw) const;
    void windowIndex(const torch::Tensor& gridThw, torch::Tensor& index, std::vector<int64_t>& boundaries) const;

    VisionConfig cfg_;
    Architecture arch_;
    bool qwen25_ = false;
    bool glm_ = false;
    GlmHead glmHead_;
    bool siglip_ = false; // PaddleOCR-VL
    SiglipHead siglipHead_;
    torch::Device device_;
    torch::Tensor patchW_, patchB_; // [width, C*T*P*P], [width] (Qwen3-VL)
    torch::Tensor positionTable_;   // Qwen3-VL: [side*side, width]
    std::vector<Block> blocks_;
    Merger merger_;
    std::vector<Merger> deepstackMergers_;
};

} // namespace ropescope::model

#pragma once
#include "core/model/engine/checkpoint.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <vector>

namespace ropescope::model {

// Intermediate tensors of one vision pass, for parity checks against reference implementations.
struct VisionTrace {
    at::Tensor patchEmbeds;               // [N, width], the patch projection (before Qwen3-VL's position table is added)
    at::Tensor rotaryFreqs;               // [N, head_dim/2], input row order
    std::vector<at::Tensor> blockOutputs; // Qwen2.5-VL: window-permuted row order, as Hugging Face
    at::Tensor cuSeqlens;                 // per-image boundaries (patches)
    at::Tensor windowIndex;               // Qwen2.5-VL: merged-unit permutation
    at::Tensor cuWindowSeqlens;
    // GLM-V: the post-conv RMSNorm, the bicubic position table and its sum with the patches, each row's
    // (h, w) in its grid, the post-layernorm and the 2x2 downsample.
    at::Tensor postConvNorm, positionEmbeds, embeddings, positionH, positionW, postLayernorm, downsample;
    // PaddleOCR-VL: the projector's pre-norm and its 2x2 raster merge (also positionEmbeds, embeddings,
    // postLayernorm above).
    at::Tensor projectorPreNorm, projectorMerged;
    // Gemma 4 (valid patches only, input row order): the 2-D rotary tables [N, head_dim] (x half, then y half);
    // also embeddings (projection + position table) and blockOutputs above.
    at::Tensor rotaryCos, rotarySin;
    // Gemma: the pooled soft tokens [tokens, width] (Gemma 4: the 3x3 pooler x sqrt(width), before
    // standardize; Gemma 3: the AvgPool, raster order) and the soft tokens the projection takes (Gemma 4:
    // standardised; Gemma 3: after mm_soft_emb_norm). Gemma 3 also fills embeddings, blockOutputs, postLayernorm.
    at::Tensor pooled, softTokens;
};

// What the vision tower hands the decoder: one embedding per merged token [M, hidden], and for Qwen3-VL
// the DeepStack features [M, hidden] of the listed vision blocks, added after decoder layers 0, 1, ...
struct VisionFeatures {
    at::Tensor embeds;
    std::vector<at::Tensor> deepstack;
};

// The vision encoder and patch merger of Qwen2-VL (LayerNorm, QuickGELU MLP, full attention per image),
// Qwen2.5-VL (RMSNorm, gated SiLU MLP, window attention with full-attention blocks) and Qwen3-VL
// (LayerNorm, gelu-tanh MLP, a biased patch projection plus a learned position table resampled to each
// image, DeepStack mergers), GLM-V (RMSNorms, a learned position table resampled bicubically, a 2x2
// Conv2d downsample and a gated merger) and PaddleOCR-VL's SigLIP-NaViT (patches in raster order, a table
// resized bilinearly, a projector that merges 2x2 patches), all with the 2-D (h, w) vision rotary; Gemma 4's tower
// (vision_tower_gemma4.cpp: an (x, y) position table, the 2-D rotary on x and y halves of each head, a 3x3
// pooler, embed_vision) and Gemma 3's SigLIP with its pooling projector (vision_tower_gemma3.cpp). Input:
// patch-flattened pixels [N, C*T*P*P] in the processor's row order and the (t, h, w) patch grid of each image
// (Gemma: valid patches only, raster order, each frame of a video its own image; docs/ENGINE.md).
class VisionTower {
public:
    VisionTower(const Checkpoint& checkpoint, c10::Device device, c10::ScalarType dtype = c10::kFloat);
    VisionFeatures forward(const at::Tensor& pixels, const at::Tensor& gridThw, VisionTrace* trace = nullptr) const;

    // Every weight under its checkpoint name with its checkpoint shape (training, saving).
    struct NamedWeight {
        std::string name;
        at::Tensor* tensor;
        std::vector<int64_t> shape;
    };
    std::vector<NamedWeight> weights();

private:
    struct Block {
        at::Tensor norm1W, norm1B, norm2W, norm2B;
        at::Tensor qkvW, qkvB, projW, projB;
        at::Tensor fc1W, fc1B, fc2W, fc2B;               // Qwen2-VL, Qwen3-VL
        at::Tensor gateW, gateB, upW, upB, downW, downB; // Qwen2.5-VL
    };
    // Each block tensor once: its name under visual.blocks.{i}., where it lives and its shape, for this
    // architecture (Qwen2.5-VL: RMSNorm without bias and a gated MLP; the others: LayerNorm and fc1/fc2).
    struct BlockTensor {
        std::string name;
        at::Tensor Block::*member;
        std::vector<int64_t> shape;
    };
    std::vector<BlockTensor> blockTensors() const;
    // Norm, then merge_size^2 neighbouring patches into one row, then fc1 -> GELU -> fc2. The DeepStack
    // mergers normalise after the merge (over the wide row), the main merger before it.
    struct Merger {
        std::string prefix;
        bool normAfterMerge = false;
        at::Tensor normW, normB, fc1W, fc1B, fc2W, fc2B;
    };
    struct MergerTensor {
        std::string name; // after the merger's prefix
        at::Tensor Merger::*member;
        std::vector<int64_t> shape;
    };
    // The one list of a merger's tensors: loading and weights() both walk it.
    std::vector<MergerTensor> mergerTensors(bool normAfterMerge) const;
    Merger loadMerger(const Checkpoint& ck, const std::string& prefix, bool normAfterMerge, c10::ScalarType dtype) const;
    at::Tensor merge(const Merger& m, const at::Tensor& x) const;
    at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;
    at::Tensor mlp(const Block& b, const at::Tensor& x) const;
    at::Tensor learnedPositions(const std::vector<int64_t>& grids) const;
    // Each patch's (h, w) in its image's or frame's patch grid, in the processor's merge-window row order [N, 2].
    at::Tensor patchCoordinates(const std::vector<int64_t>& grids) const;

    // GLM-V (vision_tower_glm.cpp): its own tensors, the table resampled as F.grid_sample(bicubic,
    // align_corners=False, border) does for each grid, and the head after the blocks.
    struct GlmHead {
        at::Tensor postConvNormW, postNormW;
        at::Tensor downsampleW, downsampleB; // [out, width * merge^2] (the Conv2d as a matmul), [out]
        at::Tensor projW, normW, normB, gateW, upW, downW;
    };
    struct GlmTensor {
        const char* name;
        at::Tensor GlmHead::*member;
        std::vector<int64_t> shape;
    };
    std::vector<GlmTensor> glmTensors() const;
    void loadGlm(const Checkpoint& ck, c10::ScalarType dtype);
    at::Tensor bicubicPositions(const at::Tensor& coordinates, const std::vector<int64_t>& grids) const;
    at::Tensor glmMerge(const at::Tensor& x, VisionTrace* trace) const;

    // PaddleOCR-VL (vision_tower_siglip.cpp): its tensors (q, k and v loaded into the blocks' fused qkv), the
    // table resized as F.interpolate(bilinear, align_corners=False) does per image, and the projector.
    struct SiglipHead {
        at::Tensor postNormW, postNormB, preNormW, preNormB, linear1W, linear1B, linear2W, linear2B;
    };
    void loadSiglip(const Checkpoint& ck, c10::ScalarType dtype);
    at::Tensor bilinearPositions(const std::vector<int64_t>& grids) const;
    at::Tensor siglipProject(const at::Tensor& x, const std::vector<int64_t>& grids, VisionTrace* trace) const;
    // Attention is block-diagonal (per image, frame or window). Blocks of one length form a group that
    // goes through one batched attention call.
    struct BlockGroup {
        int64_t length = 0, count = 0;
        at::Tensor tokens;          // the group's token indices, block after block
        bool wholeSequence = false; // the group is every token, in order: no gather or scatter needed
    };
    std::vector<BlockGroup> groupBlocks(const std::vector<int64_t>& boundaries, int64_t tokens) const;
    // cos / sin undefined: no rotary (Gemma 3's SigLIP).
    at::Tensor attend(const Block& b, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                      const std::vector<BlockGroup>& groups) const;
    // q, k, v [H, N, d] attended within each group's blocks: the context [N, H * d].
    at::Tensor attendGroups(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::vector<BlockGroup>& groups) const;
    // Per image or frame (t, h, w): its boundaries in patch rows, {0, h*w, ...}.
    static std::vector<int64_t> frameBoundaries(const std::vector<int64_t>& grids);
    at::Tensor rotaryFreqs(const at::Tensor& gridThw) const;
    void windowIndex(const at::Tensor& gridThw, at::Tensor& index, std::vector<int64_t>& boundaries) const;

    // Gemma 4 (vision_tower_gemma4.cpp). A ClippableLinear: without use_clipped_linears its bounds are undefined.
    struct ClippedLinear {
        at::Tensor w, inMin, inMax, outMin, outMax;
    };
    struct Gemma4Block {
        ClippedLinear q, k, v, o, gate, up, down;
        at::Tensor qNorm, kNorm, inputNorm, postAttentionNorm, preFeedforwardNorm, postFeedforwardNorm;
    };
    struct Gemma4Tower {
        at::Tensor positionTable; // [2, side, width]: x rows, then y rows
        std::vector<Gemma4Block> blocks;
        at::Tensor stdBias, stdScale, embedProjection; // standardize (optional); embed_vision [text hidden, width]
    };
    void loadGemma4(const Checkpoint& ck, c10::ScalarType dtype);
    at::Tensor clipped(const ClippedLinear& l, const at::Tensor& x) const;
    at::Tensor gemma4Attention(const Gemma4Block& b, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                               const std::vector<BlockGroup>& groups) const;
    VisionFeatures forwardGemma4(const at::Tensor& pixels, const std::vector<int64_t>& grids, VisionTrace* trace) const;
    // Gemma 3 (vision_tower_gemma3.cpp): SigLIP blocks in blocks_ (q, k, v fused), then the projector.
    struct Gemma3Head {
        at::Tensor postNormW, postNormB, softEmbNormW, projection; // projection [width, text hidden], used as x @ W
    };
    void loadGemma3(const Checkpoint& ck, c10::ScalarType dtype);
    VisionFeatures forwardGemma3(const at::Tensor& pixels, const std::vector<int64_t>& grids, VisionTrace* trace) const;

    VisionConfig cfg_;
    Architecture arch_;
    bool qwen25_ = false;
    bool glm_ = false;
    GlmHead glmHead_;
    bool siglip_ = false; // PaddleOCR-VL
    SiglipHead siglipHead_;
    bool gemma4_ = false, gemma3_ = false;
    Gemma4Tower gemma4Tower_;
    Gemma3Head gemma3Head_;
    c10::Device device_;
    at::Tensor patchW_, patchB_; // [width, C*T*P*P], [width] (Qwen3-VL)
    at::Tensor positionTable_;   // Qwen3-VL: [side*side, width]
    std::vector<Block> blocks_;
    Merger merger_;
    std::vector<Merger> deepstackMergers_;
};

} // namespace ropescope::model

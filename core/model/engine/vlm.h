#pragma once
#include "core/geometry/age.h"
#include "core/geometry/position_table.h"
#include "core/geometry/scheme.h"
#include "core/model/engine/language_model.h"
#include "core/model/engine/token_layout.h"
#include "core/model/engine/vision_tower.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <map>
#include <memory>
#include <optional>

namespace ropescope::model {

// k int64 indices spread evenly over [0, n - 1], first and last included: the pixel sample the vision cache
// hashes. Exact for any n (integer arithmetic).
at::Tensor evenSampleIndices(int64_t n, int64_t k);

struct ForwardRequest {
    at::Tensor inputIds;         // [L] int64
    at::Tensor pixelValues;      // [N, patch_dim] (optional)
    at::Tensor imageGridThw;     // [images, 3]
    at::Tensor videoPixelValues; // [N, patch_dim] of every video's temporal patches (optional)
    at::Tensor videoGridThw;     // [videos, 3]
    // mm_token_type_ids [L]: 0 text, 1 image, 2 video. GLM-V needs it: its video frames are pads of the image
    // token, told apart only by this (refused without it when the prompt holds vision tokens).
    at::Tensor tokenTypes;
    geometry::SchemeParams scheme; // kind and scheme parameters; rotary settings come from the model
    std::optional<geometry::AgeSchedule> age;
    DecoderCapture capture;
    int generate = 0; // greedy tokens after the prompt
    // Also keep, at capture.layers, each generation step's attention over capture.selection's columns:
    // the map of every answer token after the first (the first comes from the prompt's last row).
    bool captureSteps = false;
};

struct ForwardResult {
    geometry::Layout layout;
    std::vector<geometry::PositionTable> layerTables; // per decoder layer (shared where the scheme is)
    at::Tensor imageEmbeds, videoEmbeds;
    // Qwen3-VL: [visual tokens, hidden] per early layer, images and videos in token order (DeepStackInput).
    std::vector<at::Tensor> deepstackEmbeds;
    at::Tensor inputsEmbeds;
    DecoderOutput prefill;
    // With captureSteps: per captured layer [heads, generate - 1, columns], step k's query is the answer's
    // token k, which produced token k + 1.
    std::vector<at::Tensor> stepAttentions;
    at::Tensor generatedIds;    // [generate]
    at::Tensor generatedLogits; // [generate, vocab]
    VisionTrace vision;
    // Wall time of each stage (ms): vision (0 when cached), positions and rotary tables, decoder prefill.
    double visionMs = 0, positionsMs = 0, prefillMs = 0, generateMs = 0;
    // Each decoding step's wall time (ms), from one token read back to the next; whether the steps after the
    // second replayed a CUDA graph, and why not where one was tried and failed.
    std::vector<double> stepMs;
    bool stepsGraphed = false;
    std::string stepGraphFailure;
};

// Each decoder layer's position table, built once per distinct layer scheme (AGE alternates two).
struct LayerTables {
    std::vector<geometry::PositionTable> distinct;
    std::vector<size_t> ofLayer; // per layer: its table's index in `distinct`

    std::vector<geometry::PositionTable> perLayer() const;
    // f(table) once per distinct table, handed to every layer that shares it (rotary tables are costly).
    template <class F> auto mapPerLayer(F f) const
    {
        std::vector<decltype(f(distinct.front()))> once, out;
        for (const auto& t : distinct)
            once.push_back(f(t));
        for (size_t i : ofLayer)
            out.push_back(once[i]);
        return out;
    }
};

// A Qwen2-VL / Qwen2.5-VL / Qwen3-VL model whose decoder takes its positions from core/geometry: every layer gets
// the PositionTable of its scheme (or of AGE's choice for that layer), exactly the table `ropescope
// positions` prints for the same layout. Vision embeddings are cached per pixel content and grid, so
// changing the scheme or the question re-runs only the decoder.
class Vlm {
public:
    explicit Vlm(const QString& dir, c10::Device device = c10::kCPU, c10::ScalarType dtype = c10::kFloat);
    Vlm(Checkpoint checkpoint, c10::Device device, c10::ScalarType dtype = c10::kFloat);

    const ModelConfig& config() const { return checkpoint_.config(); }
    // What the model's folder holds that no run uses, in one line ("" when nothing): Qwen3.5's MTP head.
    std::string unusedNote() const;
    c10::Device device() const { return device_; }
    VisionTower& vision() { return vision_; }
    LanguageModel& language() { return language_; }
    ForwardResult run(const ForwardRequest& request, bool traceVision = false);
    // The scheme as the model runs it: its rotary theta, head_dim, mrope_section and (when none is asked
    // for) its frequency allocation: sectioned for Qwen2/2.5-VL, interleaved-mrope for Qwen3-VL.
    // Of decoder layer `layer` (Gemma's sliding and full layers rotate differently; every other family's layers alike).
    geometry::SchemeParams schemeForModel(const geometry::SchemeParams& requested, int layer = 0) const;
    // The position table of each decoder layer for `layout` (AGE picks each layer's scheme), in the model's
    // rotary settings: what run() feeds the decoder and what training uses.
    LayerTables layerTables(const geometry::Layout& layout, const geometry::SchemeParams& scheme,
                            const std::optional<geometry::AgeSchedule>& age) const;
    // Cached by content unless `useCache` is false (benchmarks) or a trace is requested. Pixels that are not all
    // finite are refused (ModelError naming `pixelsName`); a cache hit skips that pass, its bytes having passed it.
    VisionFeatures encodeImages(const at::Tensor& pixels, const at::Tensor& gridThw, VisionTrace* trace = nullptr, bool useCache = true,
                                const char* pixelsName = "pixel_values");
    // The cos/sin tables of `count` tokens from `from` (decoding steps past the table at `offset`), as run()
    // feeds the decoder: for passes of its own over a run's prompt (gradient relevancy).
    LayerRotary rotaryFor(const geometry::PositionTable& table, int64_t from, int64_t count, double offset = 0) const;
    // Every layer's tables for rows [from, from + count) of its position table (from < 0: decoding past its end, at
    // `offset`), each in its kind's rotary (Gemma's sliding and full layers differ).
    std::vector<LayerRotary> rotaryPerLayer(const LayerTables& tables, int64_t from, int64_t count, double offset = 0) const;

private:
    // The prompt as the decoder takes it (Vlm::preparePrompt).
    struct PreparedPrompt {
        at::Tensor ids;
        LayerTables tables;
        at::Tensor embeds;
        DeepStackInput deepstack;
        GemmaInputs gemma;
    };
    // One modality's pads and what fills them.
    struct VisionInput {
        const at::Tensor& mask;
        const at::Tensor& pixels;
        const at::Tensor& grid;
        const char* what;
        const char* pixelsName;
    };
    PreparedPrompt preparePrompt(const ForwardRequest& req, ForwardResult& r, bool traceVision);
    at::Tensor scatterVision(const VisionInput& in, at::Tensor& embeds, const at::Tensor& visualMask, int64_t visualTokens,
                             ForwardResult& r, VisionTrace* trace);
    void decodeGreedy(const ForwardRequest& req, const LayerTables& tables, KvCache& cache, ForwardResult& r);
    void refuseNonFiniteLogits(const at::Tensor& logits) const;
    static Checkpoint checkedForMemory(Checkpoint checkpoint, c10::Device device, c10::ScalarType dtype);

    Checkpoint checkpoint_;
    c10::Device device_;
    VisionTower vision_;
    LanguageModel language_;
    struct CachedVision {
        at::Tensor pixels, grid;
        VisionFeatures features;
    };
    std::map<size_t, CachedVision> visionCache_;
};

} // namespace ropescope::model

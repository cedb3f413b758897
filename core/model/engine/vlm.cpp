#include "core/model/engine/vlm.h"

#include "core/model/engine/attention_masks.h"
#include "core/model/engine/blas_kernels.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/layer_rotary.h"
#include "core/model/engine/decode_steps.h"
#include "core/model/engine/host_allocator.h"
#include "core/model/engine/model_size.h"

#include "core/geometry/errors.h"
#include "kernels/rotary.h"

#include <torch/types.h>
#include <algorithm>
#include <map>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace ropescope::model {
namespace {

std::vector<Grid> grids(const torch::Tensor& t, const char* name)
{
    std::vector<Grid> out;
    if (!t.defined() || t.numel() == 0)
        return out;
    if (t.dim() != 2 || t.size(1) != 3)
        throw ModelError(std::string(name) + ": expected [count, 3]");
    const auto c = t.to(torch::kCPU).to(torch::kInt64).contiguous();
    for (int64_t i = 0; i < c.size(0); ++i)
        out.push_back({c[i][0].item<int64_t>(), c[i][1].item<int64_t>(), c[i][2].item<int64_t>()});
    return out;
}

// Whether every value is finite. A contiguous CPU float32 tensor (what pixels are) is read in one pass over its
// bits, where an exponent of all ones is infinity or NaN: torch::isfinite(t).all() makes four passes and three
// temporaries, and on a 1k-token image took longer than the decoder pass it guards (issue 57's GPU profile).
bool allFinite(const torch::Tensor& t)
{
    if (!t.device().is_cpu() || t.scalar_type() != torch::kFloat32 || !t.is_contiguous())
        return torch::isfinite(t).all().item<bool>();
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    uint32_t nonFinite = 0;
    for (int64_t i = 0, n = t.numel(); i < n; ++i) { // no early exit: the loop vectorises
        uint32_t bits;
        std::memcpy(&bits, bytes + 4 * i, 4);
        nonFinite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    return nonFinite == 0;
}

// Equal shapes, types and bytes of two contiguous CPU tensors, in one memcmp (torch::equal makes an elementwise pass
// and a reduction).
bool sameBytes(const torch::Tensor& a, const torch::Tensor& b)
{
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type())
        return false;
    if (!a.device().is_cpu() || !b.device().is_cpu() || !a.is_contiguous() || !b.is_contiguous())
        return torch::equal(a, b);
    return std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<size_t>(a.numel() * a.element_size())) == 0;
}

// A run's largest allocations grow with the prompt: one layer's scores (heads x L x L, about three copies),
// the maps it keeps (forward keeps every layer's full L x L) and, when asked, every position's logits.
// Refuse a prompt that would need more than half of this machine's memory, naming its length, instead of
// failing inside LibTorch with an allocation message that names nothing.
void refuseOversizedRun(const ForwardRequest& req, const ModelConfig& cfg, int64_t tokens)
{
    const double length = static_cast<double>(tokens), heads = cfg.text.heads;
    const auto& selection = req.capture.selection;
    const double rows = selection.rows.defined() ? static_cast<double>(selection.rows.numel()) : length;
    const double cols = selection.cols.defined() ? static_cast<double>(selection.cols.numel()) : length;
    double bytes = 4.0 * length * length * (3.0 * heads + 1.0);
    bytes += 2 * 4.0 * static_cast<double>(req.capture.layers.size()) * heads * rows * cols; // kept, then stacked for output
    if (req.capture.allLogits)
        bytes += 2 * 4.0 * length * cfg.text.vocab;
    // Generation: the KV cache over the prompt and every new token (keys and values of each attention layer, made
    // fixed-size for the steps), and each step's logits kept for output.
    const double generate = std::max(0, req.generate), kvWidth = double(cfg.text.kvHeads) * cfg.text.headDim();
    if (generate > 0)
        bytes += 2 * 4.0 * double(cfg.text.attentionLayers().size()) * kvWidth * (length + generate) + 4.0 * generate * cfg.text.vocab;
    refuseOverHalfTheMemory(bytes, "input_ids: the prompt is " + std::to_string(tokens) + " tokens; this run", "use a shorter prompt");
}

// GLM-V's and PaddleOCR-VL's pads: images (and GLM-V's video frames) share the image token, and
// mm_token_type_ids says which is which. The ids the layout and the scatter read mark video-frame pads with
// the (otherwise unused) video token instead.
std::vector<int64_t> typedPadIds(const std::vector<int64_t>& ids, const torch::Tensor& types, const ModelConfig& cfg)
{
    const bool hasVision = std::find(ids.begin(), ids.end(), cfg.imageToken) != ids.end();
    const std::string family = cfg.architecture == Architecture::GlmV ? "GLM-V" : "PaddleOCR-VL";
    if (std::find(ids.begin(), ids.end(), cfg.videoToken) != ids.end())
        throw ModelError("input_ids holds the video token " + std::to_string(cfg.videoToken) + ", which " + family +
                         " never feeds its model (GLM-V's processor writes each frame as image pads typed 2 in mm_token_type_ids)");
    if (!types.defined() || types.numel() == 0) {
        if (hasVision)
            throw ModelError("mm_token_type_ids: " + family +
                             " needs it to place its image pads (transformers silently "
                             "falls back to 1-D positions without it); give it with input_ids");
        return ids;
    }
    if (!torch::isIntegralType(types.scalar_type(), false) || types.numel() != static_cast<int64_t>(ids.size()))
        throw ModelError("mm_token_type_ids: expected one whole number per input id (" + std::to_string(ids.size()) + "), got " +
                         std::to_string(types.numel()) + " values of " + c10::toString(types.scalar_type()));
    const auto t = types.to(torch::kCPU, torch::kInt64).contiguous().flatten();
    const int64_t maxType = cfg.architecture == Architecture::GlmV ? 2 : 1; // PaddleOCR-VL has no video path
    std::vector<int64_t> out = ids;
    for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t type = t.data_ptr<int64_t>()[i];
        const bool pad = ids[i] == cfg.imageToken;
        if (type < 0 || type > maxType || (type != 0) != pad)
            throw ModelError("mm_token_type_ids: token " + std::to_string(i) + " has type " + std::to_string(type) + " but id " +
                             std::to_string(ids[i]) + "; " +
                             (maxType == 2 ? "types 1 (image) and 2 (video) mark" : "type 1 (image) marks") +
                             " exactly the image-token pads (" + std::to_string(cfg.imageToken) + ")");
        if (type == 2)
            out[i] = cfg.videoToken;
    }
    return out;
}

} // namespace

torch::Tensor evenSampleIndices(int64_t n, int64_t k)
{
    if (n < 1 || k < 2)
        throw std::invalid_argument("evenSampleIndices: needs n >= 1 and k >= 2");
    // Integer arithmetic: a float32 linspace rounds indices past 2^24 up to beyond the end. (n - 1) * (k - 1)
    // stays far below 2^63 for any tensor that fits in memory.
    return torch::div(torch::arange(k, torch::kInt64) * (n - 1), k - 1, "floor");
}

Vlm::Vlm(const QString& dir, torch::Device device, torch::Dtype dtype) : Vlm(Checkpoint::open(dir), device, dtype) { }

// A config whose weights cannot fit is refused before the first weight is made (a config's every key may be in
// its own range while their product is terabytes); an allocation that still fails while loading names the weights.
Checkpoint Vlm::checkedForMemory(Checkpoint checkpoint, torch::Device device, torch::Dtype dtype)
{
    if (device.is_cpu())
        refuseWeightsOverMemory(checkpoint.config(), dtype == torch::kBFloat16 ? 2 : 4,
                                checkpoint.dir().endsWith(".json") ? checkpoint.dir().toStdString()
                                                                   : checkpoint.dir().toStdString() + "/config.json");
    return checkpoint;
}

// Threads: LibTorch's intra-op pool is left as it starts (1 thread on Debian 12's build unless OMP_NUM_THREADS is
// set) while OpenBLAS threads every GEMM over all cores; two threaded levels oversubscribe the cores (docs/SPEED.md,
// "Engine choices measured on the CPU"), so balanceCpuThreads keeps to one of them.
Vlm::Vlm(Checkpoint checkpoint, torch::Device device, torch::Dtype dtype)
try : checkpoint_(checkedForMemory(std::move(checkpoint), device, dtype)), device_(device), vision_(checkpoint_, device, dtype),
    language_(checkpoint_, device, dtype) {
    blasKernels(); // links the choice of OpenBLAS's kernels, made before main() (blas_kernels.h)
    balanceCpuThreads();
    reuseLargeHostAllocations();
    releaseFreeHostMemory();
} catch (const std::bad_alloc&) {
    throw ModelError("out of memory while loading the model's weights: they do not fit in this machine's memory (try bf16, or a "
                     "smaller model)");
} catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("can't allocate memory") == std::string::npos && what.find("out of memory") == std::string::npos)
        throw;
    throw ModelError("out of memory while loading the model's weights: they do not fit in this machine's memory (try bf16, or a "
                     "smaller model); LibTorch: " +
                     what.substr(0, what.find('\n')));
}

std::string Vlm::unusedNote() const
{
    const int mtp = checkpoint_.unusedMtpTensors();
    return mtp == 0 ? std::string()
                    : "the checkpoint's " + std::to_string(mtp) +
            " multi-token-prediction tensors (mtp.*) are not used: "
            "RopeScope decodes one token per step";
}

geometry::SchemeParams Vlm::schemeForModel(const geometry::SchemeParams& requested, int layer) const
{
    geometry::SchemeParams p = requested;
    const TextConfig& t = config().text;
    // The layer's kind: Gemma's full layers have their own head size, theta and frequencies (proportional: a quarter
    // of a 512-wide head at theta^(-2j/512); Gemma 3: frequencies / 8), so a scheme's allocation covers their pairs.
    p.rotary = rotaryOfLayer(t, layer);
    // XD-RoPE's newline column and span begin/end are tokens of HunyuanVL's prompt; a model without them runs
    // the scheme's axes on its own tokens (the newline column is only drawn).
    p.newlineColumn = false;
    const auto own =
        t.mropeInterleaved ? geometry::FrequencyAllocation::Kind::InterleavedMrope : geometry::FrequencyAllocation::Kind::Sectioned;
    // The model's own allocation for the 3-axis schemes that keep the default, with its mrope_section
    // (another allocation asked for keeps that allocation's default sections).
    // Schemes whose design fixes the allocation (VRoPE, VideoRoPE, HoPE) keep it and its default sections.
    // A custom scheme's own allocation (its file's allocation()) is kept like a design's.
    const bool customAllocation = p.custom && p.custom->scheme && p.custom->scheme->allocation(p.rotary.headDim, p.rotary.halfDim());
    if (geometry::componentCount(p) == 3 && p.sections.empty() && !customAllocation) {
        if (!p.allocationKind) {
            if (!geometry::designAllocation(p.kind)) {
                p.sections = t.mropeSection;
                if (t.mropeInterleaved)
                    p.allocationKind = own;
            }
        } else if (*p.allocationKind == own) {
            p.sections = t.mropeSection;
        }
    }
    if (config().architecture == Architecture::Qwen25VL) {
        p.temporal.mode = geometry::TemporalParams::Mode::Qwen25VL;
        p.temporal.tokensPerSecond = config().vision.tokensPerSecond;
    }
    return p;
}

VisionFeatures Vlm::encodeImages(const torch::Tensor& pixels, const torch::Tensor& gridThw, VisionTrace* trace, bool useCache,
                                 const char* pixelsName)
{
    auto refuseNonFinite = [&] {
        if (!allFinite(pixels)) // NaN in gives NaN logits and a meaningless answer
            throw ModelError(std::string(pixelsName) + ": holds NaN or infinite values");
    };
    if (!useCache) {
        refuseNonFinite();
        torch::NoGradGuard noGrad;
        return vision_.forward(pixels, gridThw, trace);
    }
    // Keyed by content: the same image (and grid) is encoded once, whatever the scheme or question. The key
    // hashes the grid, the size and an even sample of the pixels (hashing all of a large image costs more
    // than a decoder pass); comparing the stored pixels confirms a hit, so neither a collision nor a change
    // outside the sample can return stale features.
    const auto p = pixels.to(torch::kCPU, torch::kFloat32).contiguous();
    const auto g = gridThw.to(torch::kCPU, torch::kInt64).contiguous();
    constexpr int64_t kSampled = 4096;
    const auto sample = p.numel() > kSampled ? p.flatten().index_select(0, evenSampleIndices(p.numel(), kSampled)) : p.flatten();
    auto bytes = [](const torch::Tensor& t) {
        return std::string_view(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel() * t.element_size()));
    };
    const size_t key = std::hash<std::string_view>{}(bytes(sample)) ^ (std::hash<std::string_view>{}(bytes(g)) << 1) ^
        (static_cast<size_t>(p.numel()) << 7);
    if (!trace)
        if (const auto it = visionCache_.find(key);
            it != visionCache_.end() && sameBytes(it->second.pixels, p) && sameBytes(it->second.grid, g))
            return it->second.features;
    refuseNonFinite();
    torch::NoGradGuard noGrad;
    auto features = vision_.forward(pixels, gridThw, trace);
    if (visionCache_.size() >= 8) // a few images at a time is what an interactive session needs
        visionCache_.clear();
    visionCache_[key] = {p.clone(), g.clone(), features}; // clones: the caller may change its tensors in place
    return features;
}

std::vector<geometry::PositionTable> LayerTables::perLayer() const
{
    return mapPerLayer([](const geometry::PositionTable& t) { return t; });
}

LayerTables Vlm::layerTables(const geometry::Layout& layout, const geometry::SchemeParams& scheme,
                             const std::optional<geometry::AgeSchedule>& age) const
{
    const int layers = language_.layers();
    if (age && age->layers() != layers)
        throw ModelError("age: the schedule has " + std::to_string(age->layers()) + " layers but the model has " + std::to_string(layers));
    LayerTables out;
    std::vector<geometry::SchemeParams> built;
    try {
        for (int i = 0; i < layers; ++i) {
            const geometry::SchemeParams p = schemeForModel(age ? geometry::layerParams(scheme, *age, i) : scheme, i);
            const size_t index = static_cast<size_t>(std::find(built.begin(), built.end(), p) - built.begin());
            if (index == built.size()) {
                built.push_back(p);
                out.distinct.push_back(geometry::buildPositionTable(layout, p));
            }
            out.ofLayer.push_back(index);
        }
    } catch (const geometry::InvalidInput& e) {
        if (scheme.custom)
            throw; // a scheme file's or position table's fault (bad input: exit 2 on the command line)
        throw ModelError(e.what());
    }
    return out;
}

LayerRotary Vlm::rotaryFor(const geometry::PositionTable& table, int64_t from, int64_t count, double offset) const
{
    return rotaryForTable(table, config().text, device_, from, count, offset);
}

std::vector<LayerRotary> Vlm::rotaryPerLayer(const LayerTables& tables, int64_t from, int64_t count, double offset) const
{
    // Once per distinct table and kind of layer (Gemma's sliding and full layers rotate differently).
    const TextConfig& text = config().text;
    std::map<std::pair<size_t, int>, LayerRotary> made;
    std::vector<LayerRotary> out;
    for (size_t layer = 0; layer < tables.ofLayer.size(); ++layer) {
        const int kind = text.kindIndex(static_cast<int>(layer));
        const size_t index = tables.ofLayer[layer];
        auto [it, added] = made.try_emplace({index, kind});
        if (added) {
            const geometry::PositionTable& table = tables.distinct[index];
            const int64_t rowFrom = from < 0 ? table.size() : from; // decoding: past the table's end
            it->second = rotaryForTable(table, text, text.layerKind(static_cast<int>(layer)), device_, rowFrom, count, offset);
        }
        out.push_back(it->second);
    }
    return out;
}

// Logits that are not finite come from the weights (the inputs were checked): NaN or infinite values in the
// checkpoint, or finite ones so large that a product overflows. Reported rather than decoded into token 0.
void Vlm::refuseNonFiniteLogits(const torch::Tensor& logits) const
{
    if (torch::isfinite(logits).all().item<bool>())
        return;
    const std::string tensor = checkpoint_.firstNonFiniteTensor();
    throw BadInputFile(checkpoint_.dir().toStdString() + ": the model's logits hold NaN or infinite values: " +
                       (tensor.empty() ? std::string("no weight is NaN or infinite, so a product overflowed float32 (weights near 3e38?)")
                                       : "tensor '" + tensor + "' holds NaN or infinite values"));
}

// Places a modality's vision features on its pad tokens (and its DeepStack features on their rows of the joint
// visual list); returns the features, undefined when the prompt has none of its tokens.
torch::Tensor Vlm::scatterVision(const VisionInput& in, torch::Tensor& embeds, const torch::Tensor& visualMask, int64_t visualTokens,
                                 ForwardResult& r, VisionTrace* trace)
{
    const int64_t tokens = in.mask.sum().item<int64_t>();
    const std::string gridName = std::string(in.what) + "_grid_thw";
    if (tokens == 0) { // a grid with no tokens to place it on is a mismatched input, not nothing
        if (in.grid.defined() && in.grid.numel() > 0)
            throw ModelError(gridName + " gives " + std::to_string(in.grid.size(0)) + " " + in.what + "(s) but input_ids holds no " +
                             in.what + " tokens");
        return torch::Tensor();
    }
    if (!in.pixels.defined())
        throw ModelError(std::string("input_ids has ") + in.what + " tokens but no " + in.pixelsName + " were given");
    const VisionFeatures features = encodeImages(in.pixels, in.grid, trace, /*useCache=*/true, in.pixelsName);
    if (features.embeds.size(0) != tokens)
        throw ModelError(std::string(in.what) + " features (" + std::to_string(features.embeds.size(0)) + ") and " + in.what + " tokens (" +
                         std::to_string(tokens) + ") do not match");
    embeds = embeds.index_copy(0, in.mask.nonzero().flatten().to(device_), features.embeds);
    const auto rows = in.mask.index({visualMask}).nonzero().flatten().to(device_); // rows of the joint feature list
    if (r.deepstackEmbeds.empty())
        for (const auto& f : features.deepstack)
            r.deepstackEmbeds.push_back(torch::zeros({visualTokens, f.size(1)}, f.options()));
    for (size_t k = 0; k < features.deepstack.size(); ++k)
        r.deepstackEmbeds[k] = r.deepstackEmbeds[k].index_copy(0, rows, features.deepstack[k]);
    return features.embeds;
}

// Everything the request says, checked (ids, token types, grids against the ids, pixels), and what the decoder
// takes: the ids, each layer's table, the embeddings with vision in place, DeepStack's features.
Vlm::PreparedPrompt Vlm::preparePrompt(const ForwardRequest& req, ForwardResult& r, bool traceVision)
{
    const auto ids = req.inputIds.to(torch::kCPU, torch::kInt64).contiguous().flatten();
    std::vector<int64_t> idList(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    if (needsTokenTypes(config().architecture))
        idList = typedPadIds(idList, req.tokenTypes, config());
    r.layout = layoutFromTokens(idList, grids(req.imageGridThw, "image_grid_thw"), grids(req.videoGridThw, "video_grid_thw"), config());
    if (config().audioToken >= 0 && std::find(idList.begin(), idList.end(), config().audioToken) != idList.end())
        throw ModelError("input_ids holds the audio token " + std::to_string(config().audioToken) +
                         ": RopeScope runs no audio tower; give a prompt of text, images and video");
    const auto padIds = torch::tensor(idList, torch::kInt64); // the pads as the layout read them (GLM-V: video frames typed)
    PreparedPrompt p;
    p.ids = ids;
    const auto t0 = std::chrono::steady_clock::now();
    p.tables = layerTables(r.layout, req.scheme, req.age);
    r.layerTables = p.tables.perLayer();
    r.positionsMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // Images and videos go through the same vision tower; their embeddings replace their pad tokens.
    // DeepStack features of both are joined in token order, as transformers' visual_pos_masks.
    const auto imageMask = padIds == config().imageToken, videoMask = padIds == config().videoToken;
    const auto visualMask = imageMask | videoMask;
    // Gemma embeds its soft-token slots as the pad id (0) before they are overwritten: its image token may lie past
    // the vocabulary (Gemma 3's 262144).
    p.embeds = language_.embed(isGemma(config().architecture) ? ids.masked_fill(visualMask, 0) : ids);
    p.deepstack.positions = visualMask.nonzero().flatten().to(device_);
    const int64_t visual = p.deepstack.positions.size(0);
    r.imageEmbeds = scatterVision({imageMask, req.pixelValues, req.imageGridThw, "image", "pixel_values"}, p.embeds, visualMask, visual, r,
                                  traceVision ? &r.vision : nullptr);
    r.videoEmbeds = scatterVision({videoMask, req.videoPixelValues, req.videoGridThw, "video", "pixel_values_videos"}, p.embeds, visualMask,
                                  visual, r, nullptr);
    p.deepstack.features = r.deepstackEmbeds;
    if (isGemma(config().architecture)) {
        p.gemma.blockIds = imageBlockIds(idList, config().imageToken, config().videoToken).to(device_);
        // The per-layer inputs look image and video slots up as the pad id (transformers' llm_input_ids).
        p.gemma.perLayerIds = ids.masked_fill(visualMask.to(torch::kCPU), 0).to(device_);
    }
    return p;
}

// Greedy decoding after the prompt: each step's logits, ids and (captured) attention rows into `r`.
void Vlm::decodeGreedy(const ForwardRequest& req, const LayerTables& tables, KvCache& cache, ForwardResult& r)
{
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
    std::vector<int64_t> generated;
    std::vector<torch::Tensor> stepLogits;
    DecoderCapture stepCapture; // the new token's one row (all rows) against the prompt's captured columns
    std::vector<std::vector<torch::Tensor>> steps(req.capture.layers.size());
    if (req.captureSteps && !req.capture.layers.empty()) {
        stepCapture.layers = req.capture.layers;
        stepCapture.selection.cols = req.capture.selection.cols;
    }
    auto last = r.prefill.logits[r.prefill.logits.size(0) - 1];
    DecodeSteps decoder(language_, config().text, cache, std::max(0, req.generate - 1), stepCapture);
    Clock::time_point stepStart;
    for (int step = 0; step < req.generate; ++step) {
        stepLogits.push_back(last);
        const auto nextOnDevice = last.argmax();
        const int64_t next = nextOnDevice.item<int64_t>(); // waits for the step that made `last`
        if (step > 0)
            r.stepMs.push_back(since(stepStart));
        stepStart = Clock::now();
        generated.push_back(next);
        if (step + 1 == req.generate)
            break;
        const std::vector<LayerRotary> stepRotary = rotaryPerLayer(tables, -1, 1, step);
        std::vector<torch::Tensor> attentions;
        last = decoder.step(nextOnDevice, stepRotary, &attentions);
        for (size_t k = 0; k < attentions.size(); ++k)
            steps[k].push_back(attentions[k]);
    }
    r.stepsGraphed = decoder.graphed();
    r.stepGraphFailure = decoder.graphFailure();
    for (auto& layerSteps : steps)
        if (!layerSteps.empty())
            r.stepAttentions.push_back(torch::cat(layerSteps, 1));
    r.generatedIds = torch::tensor(generated, torch::kInt64);
    if (!stepLogits.empty())
        r.generatedLogits = torch::stack(stepLogits, 0);
}

ForwardResult Vlm::run(const ForwardRequest& req, bool traceVision)
{
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
    auto t0 = Clock::now();
    ForwardResult r;
    if (!req.inputIds.defined() || !torch::isIntegralType(req.inputIds.scalar_type(), /*includeBool=*/false))
        throw BadRequest(std::string("input_ids: expected whole-number token ids (I64 or I32), got ") +
                         (req.inputIds.defined() ? c10::toString(req.inputIds.scalar_type()) : "no tensor"));
    if (req.inputIds.numel() == 0) // nothing to place, embed or predict from: every later stage assumes a token
        throw BadRequest("input_ids: holds no tokens (an empty prompt); give at least one token id");
    if (req.generate < 0)
        throw BadRequest("generate: " + std::to_string(req.generate) + " new tokens; expected 0 or more");
    refuseOversizedRun(req, config(), req.inputIds.numel());
    // A fault of the inputs is reported as BadRequest (bad input: exit 2 on the command line), not as the model's.
    PreparedPrompt prepared;
    try {
        prepared = preparePrompt(req, r, traceVision);
    } catch (const BadInputFile&) {
        throw;
    } catch (const ModelError& e) {
        throw BadRequest(e.what());
    }
    r.inputsEmbeds = prepared.embeds;
    r.visionMs = since(t0) - r.positionsMs; // the ids' checks, embedding and vision, less the tables' time
    t0 = Clock::now();

    const int64_t L = prepared.ids.numel();
    const std::vector<LayerRotary> rotary = rotaryPerLayer(prepared.tables, 0, L);

    torch::NoGradGuard noGrad;
    KvCache cache;
    r.positionsMs += since(t0);
    t0 = Clock::now();
    r.prefill = language_.forward(prepared.embeds, rotary, req.generate > 0 ? &cache : nullptr, req.capture,
                                  prepared.deepstack.features.empty() ? nullptr : &prepared.deepstack,
                                  isGemma(config().architecture) ? &prepared.gemma : nullptr);
    refuseNonFiniteLogits(r.prefill.logits[r.prefill.logits.size(0) - 1]);
    r.prefillMs = since(t0);
    t0 = Clock::now();
    decodeGreedy(req, prepared.tables, cache, r);
    r.generateMs = since(t0);
    return r;
}

} // namespace ropescope::model

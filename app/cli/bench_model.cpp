#include "app/cli/bench_model.h"

#include "app/cli/bench_gemm_floor.h"
#include "app/cli/bench_profile.h"
#include "app/cli/bench_timing.h"
#include "app/cli/cli_error.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/model/engine/amx_gemm.h"
#include "core/model/engine/blas_kernels.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/vlm.h"
#include "kernels/linear_few_rows.h"
#include "kernels/attention.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <ATen/Parallel.h>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QThread>

#ifdef ROPESCOPE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>

namespace ropescope::cli {

namespace {

// Resident memory from /proc/self/status: field "VmRSS:" (now) or "VmHWM:" (peak), in MB.
double rssMb(const char* field)
{
    QFile f("/proc/self/status");
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith(field))
            return line.mid(static_cast<int>(qstrlen(field))).trimmed().split(' ').first().toDouble() / 1024.0;
    return 0;
}

// The CPU's GEMM kernels, which set every number of a CPU run: OpenBLAS's, and where RopeScope chose them instead of
// OpenBLAS's fallback for a CPU it does not know (blas_kernels.h).
QString blasDescription()
{
    const auto& k = model::blasKernels();
    if (k.core.empty())
        return "not OpenBLAS";
    const QString core = "OpenBLAS " + QString::fromStdString(k.core);
    return k.replaced.empty() ? core
                              : core + " (chosen by RopeScope: OpenBLAS had fallen back to " + QString::fromStdString(k.replaced) + ")";
}

// The two levels of CPU threads as the run had them (balanceCpuThreads, cpu_threads.h), and whether large GEMMs of
// bf16-valued weights ran on AMX's tiles (amx_gemm.h; ROPESCOPE_AMX=0 turns them off).
QString cpuThreadsDescription()
{
    return QString("cpu (LibTorch %1 thread(s); large GEMMs on %2; AMX %3)")
        .arg(at::get_num_threads())
        .arg(model::amx::available()
                 ? QString("AMX tiles (bf16 x3, exact to fp32) where the weight holds bf16 values, else %1 BLAS thread(s)")
                       .arg(model::largeGemmThreads())
                 : QString("%1 BLAS thread(s)").arg(model::largeGemmThreads()))
        .arg(model::amx::available() ? "on" : "off");
}

// Makes the peak RSS start again from the current RSS, so the forward passes' own peak can be read
// apart from the weights (Linux >= 4.0; false where /proc refuses).
bool resetPeakRss()
{
    QFile f("/proc/self/clear_refs");
    return f.open(QIODevice::WriteOnly) && f.write("5") == 1;
}

#ifdef ROPESCOPE_TORCH_CUDA
// allocated_bytes[0] is StatType::AGGREGATE in LibTorch 1.13 and 2.x alike; the enum itself moved
// namespace between them, the index did not.
double gpuAllocatedMb(const torch::Device& device, bool peak)
{
    const auto index = static_cast<c10::DeviceIndex>(device.index() < 0 ? 0 : device.index());
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    return static_cast<double>(peak ? stats.allocated_bytes[0].peak : stats.allocated_bytes[0].current) / 1048576.0;
}

void resetGpuPeak(const torch::Device& device)
{
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device.index() < 0 ? 0 : device.index()));
}
#endif

// --attention fused | explicit: which attention path the run takes (default: fused where LibTorch has it).
kernels::AttentionPath parseAttentionPath(const QCommandLineParser& parser)
{
    const QString path = parser.value("attention");
    if (path.isEmpty())
        return kernels::attentionPath();
    if (path == "explicit")
        return kernels::AttentionPath::Explicit;
    if (path != "fused")
        throw UsageError("--attention: expected fused or explicit, got '" + path.toStdString() + "'");
    if (!kernels::fusedAttentionAvailable())
        throw UsageError("--attention fused: this LibTorch (" TORCH_VERSION ") has no scaled_dot_product_attention (2.1 or later has)");
    return kernels::AttentionPath::Fused;
}

template <class Fn> double medianMs(int runs, Fn&& fn)
{
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(ms);
}

// The first sparse layer's MoE block on the prompt's length of tokens, against one dense SwiGLU MLP of the block's
// active width (top-k experts' widths plus the shared expert's) on the same tokens: what routing, grouping by
// expert and the many smaller GEMMs cost over the FLOPs the tokens need (issue 55's goal: within 1.5x).
template <class Sync> QJsonObject benchMoeBlock(model::Vlm& vlm, int64_t tokens, int runs, Sync&& sync)
{
    const model::TextConfig& t = vlm.config().text;
    int layer = 0;
    while (layer + 1 < t.layers && !t.moe.isSparse(layer)) // randomCheckpoint made sure one is kept
        ++layer;
    const model::MoeWeights& w = *vlm.language().moe(layer);
    const int64_t h = t.hidden, active = int64_t(t.moe.topK) * t.moe.intermediate + t.moe.sharedIntermediate;
    const auto options = w.router.options();
    torch::manual_seed(11);
    const auto x = torch::randn({tokens, h}).to(options);
    const auto gate = (torch::randn({active, h}) / std::sqrt(static_cast<double>(h))).to(options);
    const auto up = (torch::randn({active, h}) / std::sqrt(static_cast<double>(h))).to(options);
    const auto down = (torch::randn({h, active}) / std::sqrt(static_cast<double>(active))).to(options);
    torch::NoGradGuard noGrad;
    namespace F = torch::nn::functional;
    auto timeMs = [&](auto&& fn) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        sync();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    auto dense = [&] { F::linear(torch::silu(F::linear(x, gate)) * F::linear(x, up), down); };
    auto moe = [&] { model::moeForward(x, w, t.moe); };
    // Interleaved, after one untimed round of each (threads, buffers and pages made once): a shared machine's speed
    // drifts by a third within minutes, and timing all of one then all of the other put that drift into the ratio.
    // The ratio is the median of each round's own.
    timeMs(dense);
    timeMs(moe);
    std::vector<double> denseMs, moeMs, ratios;
    for (int i = 0; i < runs; ++i) {
        denseMs.push_back(timeMs(dense));
        moeMs.push_back(timeMs(moe));
        ratios.push_back(moeMs.back() / denseMs.back());
    }
    // What multiplies the experts: the few-rows kernel where the weights were packed for it (a CPU with AVX2, fp32).
    const QString kernel = w.packed() ? QString::fromStdString(kernels::linearFewRowsName()) : QString("at::linear");
    return QJsonObject{{"moe_layer", layer},
                       {"moe_expert_kernel", kernel},
                       {"moe_block_ms", median(moeMs)},
                       {"dense_mlp_active_width_ms", median(denseMs)},
                       {"moe_active_width", static_cast<double>(active)},
                       {"moe_over_dense", median(ratios)}};
}

// The config's shapes with random weights, checked before a weight is made: --layers within the config's layers,
// and an MoE config's kept layers holding a sparse one (the block is what bench model times for it).
model::Checkpoint randomCheckpoint(const QString& configPath, int layers)
{
    const int configLayers = model::loadModelConfig(configPath).text.layers;
    if (layers > configLayers)
        throw UsageError("--layers " + std::to_string(layers) + ": " + configPath.toStdString() + " has " + std::to_string(configLayers) +
                         " decoder layers");
    model::Checkpoint checkpoint = model::Checkpoint::random(configPath, 20261121, layers, /*bf16Values=*/true);
    const model::MoeConfig& moe = checkpoint.config().text.moe;
    if (moe.any() && moe.sparseCount() == 0) {
        const auto firstSparse = model::loadModelConfig(configPath).text.moe.sparseLayers;
        const auto at = std::find(firstSparse.begin(), firstSparse.end(), true) - firstSparse.begin();
        throw UsageError("--layers " + std::to_string(layers) + ": the kept layers of " + configPath.toStdString() +
                         " hold no MoE layer (its first is layer " + std::to_string(at) + "); give --layers " + std::to_string(at + 1) +
                         " or more");
    }
    return checkpoint;
}

} // namespace

void addBenchModelOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model", "Model folder to benchmark.", "DIR"},
        {"config", "Benchmark random weights with the shapes of this config.json (with --random).", "FILE"},
        {"random", "Random weights (no checkpoint file needed)."},
        {"image-tokens", "Merged image tokens of the synthetic input (default 784, a 28x28 grid).", "N"},
        {"text-tokens", "Text tokens around the image (default 216: ~1000 tokens in all).", "N"},
        {"images", "Images among the text, sharing --image-tokens (default 1).", "N"},
        {"device", "cpu (default) or cuda.", "D"},
        {"dtype", "fp32 (default) or bf16.", "T"},
        {"runs", "Timed runs per stage (default 3; the median is reported).", "N"},
        {"attention", "fused (scaled_dot_product_attention; the default on LibTorch >= 2.1) or explicit.", "PATH"},
        {"layers", "With --random: keep the first N decoder layers (a real MoE layer stack on a small machine).", "N"},
        {"gemm-floor",
         "Also time the decoder's projections alone at the prompt's length (each layer's GEMMs on random operands), alternating "
         "with prefills, and report the prefill over that floor."},
        {"profile",
         "Also run the prefill, the capture pass and a 5-token generation once each under LibTorch's profiler (2.0 or later) "
         "and write each one's operators, kernels and launches here as JSON.",
         "FILE"},
    });
}

namespace {

// bench model's flags, checked before anything is loaded.
struct BenchModelOptions {
    int imageTokens = 784, textTokens = 216, runs = 3, images = 1, layers = 0;
    torch::Device device = torch::kCPU;
    torch::Dtype dtype = torch::kFloat32;
    kernels::AttentionPath attention = kernels::AttentionPath::Fused;
};

BenchModelOptions parseBenchModelOptions(const QCommandLineParser& parser)
{
    if (parser.isSet("model") == parser.isSet("config"))
        throw UsageError("give --model DIR, or --config config.json --random");
    if (parser.isSet("config") && !parser.isSet("random"))
        throw UsageError("--config needs --random (random weights with the config's shapes)");
    BenchModelOptions o;
    o.imageTokens = parser.isSet("image-tokens") ? parseInteger(parser, "image-tokens") : 784;
    o.textTokens = parser.isSet("text-tokens") ? parseInteger(parser, "text-tokens") : 216;
    o.runs = parser.isSet("runs") ? parseInteger(parser, "runs") : 3;
    o.images = parser.isSet("images") ? parseInteger(parser, "images") : 1;
    o.layers = parser.isSet("layers") ? parseInteger(parser, "layers") : 0;
    if (parser.isSet("layers") && (!parser.isSet("random") || o.layers < 1 || o.layers > 1024))
        throw UsageError("--layers: 1 to 1024, with --config FILE --random");
    if (o.imageTokens < 1 || o.imageTokens > 65536 || o.textTokens < 2 || o.textTokens > 65536 || o.runs < 1 || o.runs > 100 ||
        o.images < 1 || o.images > 64 || o.images > o.imageTokens)
        throw UsageError("--image-tokens 1..65536, --text-tokens 2..65536, --runs 1..100, --images 1..64 (at most one per image token)");
    if (parser.isSet("profile") && !stageProfilerAvailable())
        throw UsageError("--profile needs LibTorch 2.0 or later (this is " TORCH_VERSION ")");
    o.device = parseDevice(parser);
    o.dtype = parseDtype(parser);
    o.attention = parseAttentionPath(parser);
    return o;
}

// The synthetic prompt: `images` near-square merged grids sharing imageTokens cells, text split evenly around
// them; text ids below every special id.
struct SyntheticPrompt {
    torch::Tensor ids, pixels, grid;
    std::vector<torch::Tensor> imageColumns; // each image's token positions
    int64_t rows = 1, cols = 1;
};

SyntheticPrompt syntheticPrompt(const model::ModelConfig& cfg, const BenchModelOptions& o)
{
    SyntheticPrompt p;
    const int64_t images = o.images, perImage = std::max<int64_t>(1, o.imageTokens / images);
    p.rows = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(static_cast<double>(perImage))));
    p.cols = (perImage + p.rows - 1) / p.rows;
    if (cfg.architecture == model::Architecture::Gemma3) // one fixed square image: mm_tokens_per_image tokens each
        p.rows = p.cols = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(cfg.vision.tokensPerImage))));
    const int64_t m = cfg.vision.mergeSize;
    torch::manual_seed(7);
    p.pixels = torch::randn({images * p.rows * p.cols * m * m, cfg.vision.patchDim()});
    p.grid = torch::tensor({int64_t(1), p.rows * m, p.cols * m}).view({1, 3}).repeat({images, 1});
    int64_t textCeiling = cfg.text.vocab; // below every special id the family has (-1: none, e.g. Gemma 3's video)
    for (const int64_t id : {cfg.imageToken, cfg.visionStart, cfg.visionEnd, cfg.videoToken, cfg.videoStart, cfg.audioToken})
        if (id >= 0)
            textCeiling = std::min(textCeiling, id);
    std::vector<torch::Tensor> pieces;
    int64_t length = 0;
    for (int64_t i = 0; i <= images; ++i) {
        const int64_t text = o.textTokens * (i + 1) / (images + 1) - o.textTokens * i / (images + 1);
        pieces.push_back(torch::randint(0, textCeiling, {text}));
        length += text;
        if (i == images)
            break;
        pieces.push_back(torch::tensor({int64_t(cfg.visionStart)}));
        pieces.push_back(torch::full({p.rows * p.cols}, int64_t(cfg.imageToken)));
        pieces.push_back(torch::tensor({int64_t(cfg.visionEnd)}));
        p.imageColumns.push_back(torch::arange(length + 1, length + 1 + p.rows * p.cols));
        length += p.rows * p.cols + 2;
    }
    p.ids = torch::cat(pieces);
    return p;
}

// Greedy decoding after the prompt (KV cache; Qwen3.5's DeltaNet state), 9 tokens: the first comes from the
// prefill's logits, then 8 steps, each timed from one token read back to the next. The first two steps are apart:
// on a GPU the first runs one operator at a time and the second also captures the CUDA graph the others replay.
// The steady step is the median of the rest over every run.
template <class Sync> void timeDecode(model::Vlm& vlm, const model::ForwardRequest& req, int runs, bool cuda, Sync&& sync, QJsonObject& row)
{
    QString decodeGraphs = "no (not a CUDA device)";
    model::ForwardRequest decode = req;
    decode.generate = 9;
    std::vector<double> steady, first, second;
    for (int i = 0; i < runs; ++i) {
        const auto r = vlm.run(decode);
        sync();
        first.push_back(r.stepMs.at(0));
        second.push_back(r.stepMs.at(1));
        steady.insert(steady.end(), r.stepMs.begin() + 2, r.stepMs.end());
        if (r.stepsGraphed)
            decodeGraphs = "yes";
        else if (!r.stepGraphFailure.empty())
            decodeGraphs = QString("capture failed: %1").arg(QString::fromStdString(r.stepGraphFailure).section('\n', 0, 0));
        else if (cuda)
            decodeGraphs = "no";
    }
    row["decode_step_ms"] = median(steady);
    row["decode_first_step_ms"] = median(first);
    row["decode_second_step_ms"] = median(second);
    row["decode_graphs"] = decodeGraphs;
}

// The prefill, the capture pass and a 5-token generation once each under LibTorch's profiler, written to FILE.
template <class Sync>
void writeProfile(model::Vlm& vlm, const model::ForwardRequest& plain, const model::ForwardRequest& capture, const QJsonObject& row,
                  const QString& path, bool cuda, Sync&& sync)
{
    model::ForwardRequest generation = plain;
    generation.generate = 5;
    auto stage = [&](const model::ForwardRequest& req) {
        return profileStage(
            [&] {
                vlm.run(req);
                sync();
            },
            cuda);
    };
    const QJsonObject stages{{"prefill", stage(plain)}, {"prefill_capture", stage(capture)}, {"generate_5", stage(generation)}};
    writeOutput(path, QJsonDocument(QJsonObject{{"bench", row}, {"stages", stages}}).toJson());
}

QByteArray benchText(const QJsonObject& row)
{
    QByteArray text;
    for (auto it = row.begin(); it != row.end(); ++it)
        text += it.key().toUtf8().leftJustified(24) +
            (it.value().isDouble() ? QByteArray::number(it.value().toDouble(), 'f', 2) : it.value().toString().toUtf8()) + "\n";
    return text;
}

// Every layer's text -> image attention captured: rows are the tokens after the first image that are not image
// tokens, columns every image token.
model::ForwardRequest captureRequest(const model::ForwardRequest& plain, const SyntheticPrompt& prompt, const model::ModelConfig& cfg,
                                     torch::Device device)
{
    model::ForwardRequest req = plain;
    const int64_t L = prompt.ids.numel();
    const auto afterFirstImage = torch::arange(L) > prompt.imageColumns.front()[-1];
    req.capture.selection.rows = torch::arange(L).masked_select(afterFirstImage & (prompt.ids != int64_t(cfg.imageToken))).to(device);
    req.capture.selection.cols = torch::cat(prompt.imageColumns).to(device);
    req.capture.layers = cfg.text.attentionLayers(); // Qwen3.5: its full-attention layers
    return req;
}

QString benchedModel(const QCommandLineParser& parser, const BenchModelOptions& o, const model::ModelConfig& cfg)
{
    if (parser.isSet("model"))
        return parser.value("model");
    return parser.value("config") + " (random weights" +
        (o.layers > 0 ? QString(", first %1 of its layers)").arg(cfg.text.layers) : QString(")"));
}

void addAll(QJsonObject& row, const QJsonObject& more)
{
    for (auto it = more.begin(); it != more.end(); ++it)
        row[it.key()] = it.value();
}

} // namespace

int benchModel(const QCommandLineParser& parser)
{
    const BenchModelOptions o = parseBenchModelOptions(parser);
    kernels::setAttentionPath(o.attention);
    const bool cuda = o.device.is_cuda();
    auto sync = [&] {
        if (cuda)
            torch::cuda::synchronize();
    };

    return runModelCommand([&] {
        const auto t0 = std::chrono::steady_clock::now();
        model::Vlm vlm = parser.isSet("model") ? model::Vlm(parser.value("model"), o.device, o.dtype)
                                               : model::Vlm(randomCheckpoint(parser.value("config"), o.layers), o.device, o.dtype);
        sync();
        const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // Memory after loading is the weights (plus the runtime); the forward peak is measured above it.
        const double loadedRssMb = rssMb("VmRSS:");
        const bool rssPeakReset = resetPeakRss();
#ifdef ROPESCOPE_TORCH_CUDA
        double loadedGpuMb = 0;
        if (cuda) {
            loadedGpuMb = gpuAllocatedMb(o.device, false);
            resetGpuPeak(o.device);
        }
#endif
        const model::ModelConfig& cfg = vlm.config();
        const SyntheticPrompt prompt = syntheticPrompt(cfg, o);
        const int64_t L = prompt.ids.numel();
        const int runs = o.runs;

        const double visionMs = medianMs(runs, [&] {
            vlm.encodeImages(prompt.pixels, prompt.grid, nullptr, /*useCache=*/false);
            sync();
        });
        model::ForwardRequest req;
        req.inputIds = prompt.ids;
        req.pixelValues = prompt.pixels;
        req.imageGridThw = prompt.grid;
        req.scheme = geometry::defaultSchemeParams(model::ownSchemeKind(cfg));
        if (model::needsTokenTypes(cfg.architecture)) // GLM-V and PaddleOCR-VL place image pads by their type (1)
            req.tokenTypes = (prompt.ids == int64_t(cfg.imageToken)).to(torch::kInt64);
        vlm.run(req); // warm up and fill the vision cache: the decoder stages below re-run only the decoder
        sync();
        std::vector<double> cachedVisionRuns, positionsRuns, decoderRuns; // each stage's median, as the whole's
        const double prefillMs = medianMs(runs, [&] {
            const auto r = vlm.run(req);
            sync();
            cachedVisionRuns.push_back(r.visionMs);
            positionsRuns.push_back(r.positionsMs);
            decoderRuns.push_back(r.prefillMs);
        });
        const double cachedVisionMs = median(cachedVisionRuns), positionsMs = median(positionsRuns), decoderMs = median(decoderRuns);
        QJsonObject decodeTimes;
        timeDecode(vlm, req, runs, cuda, sync, decodeTimes);
        const model::ForwardRequest plainPrefill = req;
        req = captureRequest(plainPrefill, prompt, cfg, o.device);
        int64_t capturedBytes = 0;
        const double captureMs = medianMs(runs, [&] {
            const auto r = vlm.run(req);
            sync();
            capturedBytes = 0;
            for (const auto& a : r.prefill.attentions)
                capturedBytes += a.numel() * static_cast<int64_t>(a.element_size());
        });

        const int64_t images = o.images;
        QJsonObject row{
            {"model", benchedModel(parser, o, cfg)},
            {"device", cuda ? "cuda" : cpuThreadsDescription()},
            {"blas", blasDescription()},
            {"dtype", o.dtype == torch::kBFloat16 ? "bf16" : "fp32"},
            {"attention",
             o.attention == kernels::AttentionPath::Fused ? "fused (LibTorch " TORCH_VERSION ")" : "explicit (LibTorch " TORCH_VERSION ")"},
            {"tokens", static_cast<double>(L)},
            {"images", static_cast<double>(images)},
            {"image_tokens", static_cast<double>(images * prompt.rows * prompt.cols)},
            {"captured_rows", static_cast<double>(req.capture.selection.rows.numel())},
            {"load_ms", loadMs},
            {"vision_ms", visionMs},
            {"prefill_ms", prefillMs},
            {"cached_vision_lookup_ms", cachedVisionMs},
            {"positions_ms", positionsMs},
            {"decoder_ms", decoderMs},
            {"prefill_capture_ms", captureMs},
            {"capture_overhead_ms", captureMs - prefillMs},
            {"captured_mb", static_cast<double>(capturedBytes) / 1048576.0},
            {"loaded_rss_mb", loadedRssMb},
            {"peak_rss_mb", rssMb("VmHWM:")}};
        addAll(row, decodeTimes);
        if (rssPeakReset)
            row["forward_peak_rss_mb"] = rssMb("VmHWM:") - loadedRssMb;
        if (parser.isSet("gemm-floor"))
            addAll(row,
                   benchGemmFloor(
                       cfg.text, L, runs, vlm.language().lmHead().options(),
                       [&] {
                           const auto r = vlm.run(plainPrefill);
                           sync();
                           return r.prefillMs;
                       },
                       sync));
        if (cfg.text.moe.any())
            addAll(row, benchMoeBlock(vlm, L, runs, sync));
#ifdef ROPESCOPE_TORCH_CUDA
        if (cuda) {
            const double peakGpuMb = gpuAllocatedMb(o.device, true);
            row["loaded_gpu_mb"] = loadedGpuMb;
            row["peak_gpu_mb"] = peakGpuMb;
            row["forward_peak_gpu_mb"] = peakGpuMb - loadedGpuMb;
        }
#endif
        if (parser.isSet("profile"))
            writeProfile(vlm, plainPrefill, req, row, parser.value("profile"), cuda, sync);
        writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(row).toJson() : benchText(row));
        return 0;
    });
}

} // namespace ropescope::cli

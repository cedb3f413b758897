#include "bench_model.h"

#include "cli_error.h"
#include "geometry_options.h"
#include "model/vlm.h"
#include "model_options.h"
#include "output.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QThread>

#ifdef ROPESCOPE_WITH_CUDA
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

// Makes the peak RSS start again from the current RSS, so the forward passes' own peak can be read
// apart from the weights (Linux >= 4.0; false where /proc refuses).
bool resetPeakRss()
{
    QFile f("/proc/self/clear_refs");
    return f.open(QIODevice::WriteOnly) && f.write("5") == 1;
}

#ifdef ROPESCOPE_WITH_CUDA
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

template <class Fn>
double medianMs(int runs, Fn&& fn)
{
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
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
        {"device", "cpu (default) or cuda.", "D"},
        {"dtype", "fp32 (default) or bf16.", "T"},
        {"runs", "Timed runs per stage (default 3; the median is reported).", "N"},
    });
}

int benchModel(const QCommandLineParser& parser)
{
    if (parser.isSet("model") == parser.isSet("config"))
        throw UsageError("give --model DIR, or --config config.json --random");
    if (parser.isSet("config") && !parser.isSet("random"))
        throw UsageError("--config needs --random (random weights with the config's shapes)");
    const int imageTokens = parser.isSet("image-tokens") ? parseInteger(parser, "image-tokens") : 784;
    const int textTokens = parser.isSet("text-tokens") ? parseInteger(parser, "text-tokens") : 216;
    const int runs = parser.isSet("runs") ? parseInteger(parser, "runs") : 3;
    if (imageTokens < 1 || imageTokens > 65536 || textTokens < 2 || textTokens > 65536 || runs < 1 || runs > 100)
        throw UsageError("--image-tokens 1..65536, --text-tokens 2..65536, --runs 1..100");
    const torch::Device device = parseDevice(parser);
    const torch::Dtype dtype = parseDtype(parser);
    auto sync = [&] {
        if (device.is_cuda())
            torch::cuda::synchronize();
    };

    return runModelCommand([&] {
        const auto t0 = std::chrono::steady_clock::now();
        model::Vlm vlm = parser.isSet("model") ? model::Vlm(parser.value("model"), device, dtype)
                                               : model::Vlm(model::Checkpoint::random(parser.value("config")), device, dtype);
        sync();
        const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // Memory after loading is the weights (plus the runtime); the forward peak is measured above it.
        const double loadedRssMb = rssMb("VmRSS:");
        const bool rssPeakReset = resetPeakRss();
#ifdef ROPESCOPE_WITH_CUDA
        double loadedGpuMb = 0;
        if (device.is_cuda()) {
            loadedGpuMb = gpuAllocatedMb(device, false);
            resetGpuPeak(device);
        }
#endif
        const model::ModelConfig& cfg = vlm.config();

        // A near-square merged grid with imageTokens cells; text ids below every special id.
        const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(static_cast<double>(imageTokens))));
        const int64_t cols = (imageTokens + rows - 1) / rows;
        const int64_t m = cfg.vision.mergeSize;
        torch::manual_seed(7);
        const auto pixels = torch::randn({rows * cols * m * m, cfg.vision.patchDim()});
        const auto grid = torch::tensor({int64_t(1), rows * m, cols * m}).view({1, 3});
        const int64_t textCeiling = std::min<int64_t>({cfg.imageToken, cfg.visionStart, cfg.visionEnd, cfg.videoToken, cfg.text.vocab});
        const auto before = torch::randint(0, textCeiling, {textTokens / 2});
        const auto after = torch::randint(0, textCeiling, {textTokens - textTokens / 2});
        const auto ids = torch::cat({before, torch::tensor({int64_t(cfg.visionStart)}), torch::full({rows * cols}, int64_t(cfg.imageToken)),
                                     torch::tensor({int64_t(cfg.visionEnd)}), after});
        const int64_t L = ids.numel();

        const double visionMs = medianMs(runs, [&] {
            vlm.encodeImages(pixels, grid, nullptr, /*useCache=*/false);
            sync();
        });
        model::ForwardRequest req;
        req.inputIds = ids;
        req.pixelValues = pixels;
        req.imageGridThw = grid;
        req.scheme.kind = geometry::SchemeKind::Mrope;
        vlm.run(req); // warm up and fill the vision cache: the decoder stages below re-run only the decoder
        sync();
        double cachedVisionMs = 0, positionsMs = 0, decoderMs = 0;
        const double prefillMs = medianMs(runs, [&] {
            const auto r = vlm.run(req);
            sync();
            cachedVisionMs = r.visionMs;
            positionsMs = r.positionsMs;
            decoderMs = r.prefillMs;
        });
        // Capture every layer's text -> image attention (rows: text after the image; cols: image tokens).
        const int64_t imageStart = before.numel() + 1;
        req.capture.selection.rows = torch::arange(imageStart + rows * cols, L).to(device);
        req.capture.selection.cols = torch::arange(imageStart, imageStart + rows * cols).to(device);
        for (int i = 0; i < cfg.text.layers; ++i)
            req.capture.layers.push_back(i);
        int64_t capturedBytes = 0;
        const double captureMs = medianMs(runs, [&] {
            const auto r = vlm.run(req);
            sync();
            capturedBytes = 0;
            for (const auto& a : r.prefill.attentions)
                capturedBytes += a.numel() * static_cast<int64_t>(a.element_size());
        });

        QJsonObject row{{"model", parser.isSet("model") ? parser.value("model") : parser.value("config") + " (random weights)"},
                        {"device", device.is_cuda() ? "cuda" : QString("cpu (LibTorch %1 thread(s), GEMMs threaded by BLAS)").arg(torch::get_num_threads())},
                        {"dtype", dtype == torch::kBFloat16 ? "bf16" : "fp32"},
                        {"tokens", static_cast<double>(L)},
                        {"image_tokens", static_cast<double>(rows * cols)},
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
        if (rssPeakReset)
            row["forward_peak_rss_mb"] = rssMb("VmHWM:") - loadedRssMb;
#ifdef ROPESCOPE_WITH_CUDA
        if (device.is_cuda()) {
            const double peakGpuMb = gpuAllocatedMb(device, true);
            row["loaded_gpu_mb"] = loadedGpuMb;
            row["peak_gpu_mb"] = peakGpuMb;
            row["forward_peak_gpu_mb"] = peakGpuMb - loadedGpuMb;
        }
#endif
        QByteArray text;
        for (auto it = row.begin(); it != row.end(); ++it)
            text += it.key().toUtf8().leftJustified(24) + (it.value().isDouble() ? QByteArray::number(it.value().toDouble(), 'f', 2)
                                                                                 : it.value().toString().toUtf8())
                    + "\n";
        writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(row).toJson() : text);
        return 0;
    });
}

} // namespace ropescope::cli

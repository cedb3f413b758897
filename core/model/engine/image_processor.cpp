#include "core/model/engine/image_processor.h"

#include "core/io/input_file.h"

#include <torch/types.h>
#include <torch/nn/functional/upsampling.h>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QImageReader>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <cstdio>
#include <mutex>

#include <unistd.h>

namespace ropescope::model {

int ProcessedImage::tokens() const
{
    return static_cast<int>(grid[0][0].item<int64_t>() * grid[0][1].item<int64_t>() * grid[0][2].item<int64_t>() / (mergeSize * mergeSize));
}

std::pair<int64_t, int64_t> smartResize(int64_t height, int64_t width, int64_t factor, int64_t minPixels, int64_t maxPixels)
{
    const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
    // nearbyint rounds half to even, as Python's round().
    int64_t hBar = std::max<int64_t>(factor, static_cast<int64_t>(std::nearbyint(h / f)) * factor);
    int64_t wBar = std::max<int64_t>(factor, static_cast<int64_t>(std::nearbyint(w / f)) * factor);
    if (hBar * wBar > maxPixels) {
        const double beta = std::sqrt(h * w / static_cast<double>(maxPixels));
        hBar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
        wBar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
    } else if (hBar * wBar < minPixels) {
        const double beta = std::sqrt(static_cast<double>(minPixels) / (h * w));
        hBar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
        wBar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
    }
    return {hBar, wBar};
}

namespace {

// libpng reports a decoding error by printing "libpng error: ..." to stderr itself (Qt gives it no error
// callback), which put a second line before RopeScope's one-line error. While an image decodes, stderr
// goes to a temporary file; what was printed joins the error message, or Qt's (quiet) warnings.
class StderrCapture {
public:
    StderrCapture() : lock_(mutex())
    {
        std::fflush(stderr);
        saved_ = ::dup(2);
        file_ = std::tmpfile();
        if (saved_ < 0 || !file_ || ::dup2(::fileno(file_), 2) < 0)
            restore();
    }
    ~StderrCapture() { restore(); }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    // Restores stderr and returns what was written to it meanwhile (its first line, trimmed).
    QString finish()
    {
        QString text;
        if (file_ && saved_ >= 0) {
            std::fflush(stderr);
            ::dup2(saved_, 2);
            char line[512] = {};
            std::rewind(file_);
            if (std::fgets(line, sizeof line, file_))
                text = QString::fromLocal8Bit(line).trimmed();
        }
        restore();
        return text;
    }

private:
    static std::mutex& mutex()
    {
        static std::mutex m;
        return m;
    }
    void restore()
    {
        if (saved_ >= 0) {
            std::fflush(stderr);
            ::dup2(saved_, 2);
            ::close(saved_);
            saved_ = -1;
        }
        if (file_) {
            std::fclose(file_);
            file_ = nullptr;
        }
    }
    std::lock_guard<std::mutex> lock_;
    int saved_ = -1;
    std::FILE* file_ = nullptr;
};

} // namespace

QImage loadImage(const QString& path)
{
    try {
        io::requireRegularFile(path, "image");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    // Qt refuses images over 128 MB of pixels by default (~33 MP); the documented cap is 100 MP, which
    // takes up to 800 MB at 16-bit RGBA while decoding.
    if (QImageReader::allocationLimit() < 1024)
        QImageReader::setAllocationLimit(1024);
    QImageReader reader(path);
    const QSize size = reader.size();
    if (!reader.canRead())
        throw BadInputFile(path.toStdString() + ": not a readable image (" + reader.errorString().toStdString() + ")");
    if (size.isValid() && static_cast<int64_t>(size.width()) * size.height() > 100'000'000)
        throw BadInputFile(path.toStdString() + ": larger than 100 megapixels");
    StderrCapture capture;
    QImage image = reader.read();
    const QString decoderSaid = capture.finish();
    if (image.isNull())
        throw BadInputFile(path.toStdString() + ": corrupt or unsupported image (" + reader.errorString().toStdString() +
                           (decoderSaid.isEmpty() ? std::string() : "; " + decoderSaid.toStdString()) + ")");
    if (!decoderSaid.isEmpty())
        qWarning("%s: %s", qPrintable(path), qPrintable(decoderSaid));
    const double aspect = static_cast<double>(std::max(image.width(), image.height())) / std::min(image.width(), image.height());
    if (aspect > 200)
        throw BadInputFile(path.toStdString() + ": aspect ratio over 200");
    return image.convertToFormat(QImage::Format_RGB888);
}

namespace {

// One picture resized to h x w like PIL's BICUBIC (BILINEAR for Gemma 3; antialiased when shrinking), rescaled and
// normalised: [1, 3, h, w] float32.
torch::Tensor normalisedPixels(const QImage& source, int64_t h, int64_t w, const PreprocessOptions& options)
{
    const bool bilinear = options.kind == ImageProcessorKind::Gemma3;
    const QImage rgb = source.convertToFormat(QImage::Format_RGB888);
    auto pixels = torch::empty({rgb.height(), rgb.width(), 3}, torch::kUInt8);
    for (int y = 0; y < rgb.height(); ++y)
        std::memcpy(pixels[y].data_ptr(), rgb.constScanLine(y), static_cast<size_t>(rgb.width()) * 3);
    auto x = pixels.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32);
    if (h != rgb.height() || w != rgb.width()) { // PIL's resize to the same size is a copy
        auto resize = torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).align_corners(false).antialias(true);
        if (bilinear)
            resize.mode(torch::kBilinear);
        else
            resize.mode(torch::kBicubic);
        x = torch::nn::functional::interpolate(x, resize);
        x = x.round().clamp(0, 255); // PIL hands back uint8
    }
    x = x / 255.0;
    const auto mean = torch::tensor({options.mean[0], options.mean[1], options.mean[2]}).view({1, 3, 1, 1});
    const auto stdev = torch::tensor({options.stdev[0], options.stdev[1], options.stdev[2]}).view({1, 3, 1, 1});
    return (x - mean) / stdev;
}

// Frames [N, 3, h, w] (N a multiple of the temporal patch) as the processor's patch rows, merge-window-major
// within each temporal patch: transformers' reshape(grid_t, tp, C, gh/m, m, p, gw/m, m, p) and permute; in
// raster order for PaddleOCR-VL.
ProcessedImage patchRows(const torch::Tensor& frames, const VisionConfig& v)
{
    const int64_t t = v.temporalPatch, p = v.patchSize, m = v.mergeSize, h = frames.size(2), w = frames.size(3), gh = h / p, gw = w / p;
    const int64_t gt = frames.size(0) / t;
    // PaddleOCR-VL's processor flattens in raster order (its projector groups the 2x2 windows itself).
    const auto x = v.rasterPatches ? frames.reshape({gt, t, 3, gh, p, gw, p}).permute({0, 3, 5, 2, 1, 4, 6})
                                   : frames.reshape({gt, t, 3, gh / m, m, p, gw / m, m, p}).permute({0, 3, 6, 4, 7, 2, 1, 5, 8});
    ProcessedImage out;
    out.pixels = x.reshape({gt * gh * gw, 3 * t * p * p}).contiguous();
    out.grid = torch::tensor({gt, gh, gw}).view({1, 3});
    out.resizedWidth = static_cast<int>(w);
    out.resizedHeight = static_cast<int>(h);
    out.mergeSize = static_cast<int>(m);
    return out;
}

// Gemma 4's rows: frames [F, 3, h, w] patch by patch in raster order, each patch (py, px, c); grid (F, h/p, w/p).
ProcessedImage gemma4Rows(const torch::Tensor& frames, const VisionConfig& v)
{
    const int64_t f = frames.size(0), p = v.patchSize, h = frames.size(2), w = frames.size(3), gh = h / p, gw = w / p;
    ProcessedImage out;
    out.pixels = frames.reshape({f, 3, gh, p, gw, p}).permute({0, 2, 4, 3, 5, 1}).reshape({f * gh * gw, p * p * 3}).contiguous();
    out.grid = torch::tensor({f, gh, gw}).view({1, 3});
    out.resizedWidth = static_cast<int>(w);
    out.resizedHeight = static_cast<int>(h);
    out.mergeSize = v.poolingKernel;
    return out;
}

} // namespace

std::pair<int64_t, int64_t> gemma4ResizedSize(int64_t height, int64_t width, int64_t patch, int64_t maxPatches, int64_t pooling)
{
    // As transformers' Python: float division, floor, then the two edge cases of a side that rounds to 0.
    const double targetPixels = static_cast<double>(maxPatches * patch * patch);
    const double factor = std::sqrt(targetPixels / static_cast<double>(height * width));
    const int64_t side = pooling * patch;
    int64_t h = static_cast<int64_t>(std::floor(factor * static_cast<double>(height) / static_cast<double>(side))) * side;
    int64_t w = static_cast<int64_t>(std::floor(factor * static_cast<double>(width) / static_cast<double>(side))) * side;
    if (h == 0 && w == 0)
        throw ModelError("image: a " + std::to_string(width) + " x " + std::to_string(height) +
                         " px image resizes to 0 x 0 (sides are multiples of " + std::to_string(side) + " px)");
    const int64_t maxSide = (maxPatches / (pooling * pooling)) * side;
    if (h == 0) {
        h = side;
        w = std::min(static_cast<int64_t>(std::floor(static_cast<double>(width) / static_cast<double>(height))) * side, maxSide);
    } else if (w == 0) {
        w = side;
        h = std::min(static_cast<int64_t>(std::floor(static_cast<double>(height) / static_cast<double>(width))) * side, maxSide);
    }
    if (static_cast<double>(h * w) > targetPixels)
        throw ModelError("image: resizing " + std::to_string(width) + " x " + std::to_string(height) + " px to " + std::to_string(w) +
                         " x " + std::to_string(h) + " exceeds " + std::to_string(maxPatches) + " patches");
    return {h, w};
}

std::pair<int64_t, int64_t> processedSize(int64_t height, int64_t width, const VisionConfig& v, const PreprocessOptions& options,
                                          bool video)
{
    switch (options.kind) {
    case ImageProcessorKind::Gemma4: {
        const int64_t budget = video ? options.maxSoftTokensVideo : options.maxSoftTokens;
        return gemma4ResizedSize(height, width, v.patchSize, budget * v.poolingKernel * v.poolingKernel, v.poolingKernel);
    }
    case ImageProcessorKind::Gemma3: return {v.imageSize, v.imageSize};
    case ImageProcessorKind::Qwen: break;
    }
    return smartResize(height, width, int64_t(v.patchSize) * v.mergeSize, options.minPixels, options.maxPixels);
}

ProcessedImage preprocessImage(const QImage& source, const VisionConfig& v, const PreprocessOptions& options)
{
    if (options.kind != ImageProcessorKind::Qwen) {
        const auto [h, w] = processedSize(source.height(), source.width(), v, options);
        const auto pixels = normalisedPixels(source, h, w, options);
        return options.kind == ImageProcessorKind::Gemma4 ? gemma4Rows(pixels, v) : patchRows(pixels, v); // Gemma 3: raster, (c, py, px)
    }
    const int64_t factor = v.patchSize * v.mergeSize;
    const auto [h, w] = smartResize(source.height(), source.width(), factor, options.minPixels, options.maxPixels);
    // One image fills a whole temporal patch.
    return patchRows(normalisedPixels(source, h, w, options).repeat({v.temporalPatch, 1, 1, 1}), v);
}

ProcessedImage preprocessVideo(const std::vector<QImage>& frames, const VisionConfig& v, const PreprocessOptions& options)
{
    if (frames.empty())
        throw ModelError("a video needs at least one frame");
    if (frames.size() > static_cast<size_t>(kMaxVideoFrames))
        throw ModelError("a video takes at most " + std::to_string(kMaxVideoFrames) + " frames, got " + std::to_string(frames.size()));
    if (options.kind == ImageProcessorKind::Gemma3)
        throw ModelError("video: Gemma 3 has no video path (its processor and model take images only)");
    if (options.kind == ImageProcessorKind::Gemma4) {
        const auto [h, w] = processedSize(frames.front().height(), frames.front().width(), v, options, /*video=*/true);
        std::vector<torch::Tensor> x;
        for (const QImage& frame : frames)
            x.push_back(normalisedPixels(frame, h, w, options));
        return gemma4Rows(torch::cat(x), v);
    }
    const int64_t factor = v.patchSize * v.mergeSize;
    const auto [h, w] = smartResize(frames.front().height(), frames.front().width(), factor, options.minPixels, options.maxPixels);
    std::vector<torch::Tensor> x;
    for (const QImage& frame : frames)
        x.push_back(normalisedPixels(frame, h, w, options));
    while (x.size() % static_cast<size_t>(v.temporalPatch) != 0)
        x.push_back(x.back()); // transformers pads the last temporal patch with copies of the last frame
    return patchRows(torch::cat(x), v);
}

} // namespace ropescope::model

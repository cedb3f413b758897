#include "image_processor.h"

#include "io/input_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QImageReader>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

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

QImage loadImage(const QString& path)
{
    try {
        io::requireRegularFile(path, "image");
    } catch (const io::IoError& e) {
        throw ModelError(e.what());
    }
    // Qt refuses images over 128 MB of pixels by default (~33 MP); the documented cap is 100 MP, which
    // takes up to 800 MB at 16-bit RGBA while decoding.
    if (QImageReader::allocationLimit() < 1024)
        QImageReader::setAllocationLimit(1024);
    QImageReader reader(path);
    const QSize size = reader.size();
    if (!reader.canRead())
        throw ModelError(path.toStdString() + ": not a readable image (" + reader.errorString().toStdString() + ")");
    if (size.isValid() && static_cast<int64_t>(size.width()) * size.height() > 100'000'000)
        throw ModelError(path.toStdString() + ": larger than 100 megapixels");
    QImage image = reader.read();
    if (image.isNull())
        throw ModelError(path.toStdString() + ": corrupt or unsupported image (" + reader.errorString().toStdString() + ")");
    const double aspect = static_cast<double>(std::max(image.width(), image.height())) / std::min(image.width(), image.height());
    if (aspect > 200)
        throw ModelError(path.toStdString() + ": aspect ratio over 200");
    return image.convertToFormat(QImage::Format_RGB888);
}

PreprocessOptions defaultPreprocessOptions(const ModelConfig& config)
{
    PreprocessOptions o;
    const int64_t factor = int64_t(config.vision.patchSize) * config.vision.mergeSize;
    o.maxPixels = 1280 * factor * factor;
    if (config.architecture == Architecture::Qwen3VL) {
        o.minPixels = 65536; // Qwen3-VL's size.shortest_edge
        o.mean = {0.5f, 0.5f, 0.5f};
        o.stdev = {0.5f, 0.5f, 0.5f};
    }
    return o;
}

PreprocessOptions loadPreprocessOptions(const QString& modelDir, const ModelConfig& config)
{
    PreprocessOptions o = defaultPreprocessOptions(config);
    const QString path = QDir(modelDir).filePath("preprocessor_config.json");
    if (!QFileInfo::exists(path))
        return o; // a folder without one (the bundled models) uses its architecture's processor settings
    const std::string where = path.toStdString();
    QJsonObject c;
    try {
        const QJsonDocument doc = QJsonDocument::fromJson(io::readInputFile(path, 1 << 20, "preprocessor config"));
        if (!doc.isObject())
            throw ModelError(where + ": not a JSON object");
        c = doc.object();
    } catch (const io::IoError& e) {
        throw ModelError(e.what());
    }
    if (c.contains("size") && !c["size"].isObject())
        throw ModelError(where + ": 'size' must be an object");
    const QJsonObject size = c["size"].toObject();
    // min_pixels / max_pixels (Qwen2-VL), or size.shortest_edge / size.longest_edge (newer processors).
    const auto pixels = [&](const char* key, const char* sizeKey, int64_t fallback) {
        const QJsonValue v = c.contains(key) ? c[key] : size[sizeKey];
        if (v.isUndefined() || v.isNull())
            return fallback;
        const double x = v.toDouble(NAN);
        if (!v.isDouble() || !(x >= 1 && x <= 1e12) || x != std::floor(x))
            throw ModelError(where + ": '" + key + "' must be a whole number of pixels from 1 to 1e12");
        return static_cast<int64_t>(x);
    };
    o.minPixels = pixels("min_pixels", "shortest_edge", o.minPixels);
    const int64_t maxPixels = pixels("max_pixels", "longest_edge", o.maxPixels);
    if (o.minPixels > maxPixels)
        throw ModelError(where + ": min_pixels " + std::to_string(o.minPixels) + " exceeds max_pixels " + std::to_string(maxPixels));
    o.maxPixels = std::max(o.minPixels, std::min(o.maxPixels, maxPixels)); // RopeScope's own cap, see the header
    const auto channels = [&](const char* key, std::array<float, 3>& out, bool positive) {
        if (!c.contains(key))
            return;
        const QJsonArray a = c[key].toArray();
        if (!c[key].isArray() || a.size() != 3)
            throw ModelError(where + ": '" + key + "' must be 3 numbers (R, G, B)");
        for (int i = 0; i < 3; ++i) {
            const double x = a[i].toDouble(NAN);
            if (!a[i].isDouble() || !std::isfinite(x) || std::abs(x) > 1e3 || (positive && !(x > 1e-6)))
                throw ModelError(where + ": '" + key + "' must be 3 " + (positive ? "numbers above 0" : "finite numbers"));
            out[static_cast<size_t>(i)] = static_cast<float>(x);
        }
    };
    channels("image_mean", o.mean, false);
    channels("image_std", o.stdev, true);
    return o;
}

ProcessedImage preprocessImage(const QImage& source, const VisionConfig& v, const PreprocessOptions& options)
{
    const QImage rgb = source.convertToFormat(QImage::Format_RGB888);
    const int64_t factor = v.patchSize * v.mergeSize;
    const auto [h, w] = smartResize(rgb.height(), rgb.width(), factor, options.minPixels, options.maxPixels);

    // HWC uint8 -> [1, 3, H, W] float, resampled like PIL's BICUBIC (antialiased when shrinking).
    auto pixels = torch::empty({rgb.height(), rgb.width(), 3}, torch::kUInt8);
    for (int y = 0; y < rgb.height(); ++y)
        std::memcpy(pixels[y].data_ptr(), rgb.constScanLine(y), static_cast<size_t>(rgb.width()) * 3);
    auto x = pixels.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32);
    if (h != rgb.height() || w != rgb.width()) { // PIL's resize to the same size is a copy
        x = torch::nn::functional::interpolate(
            x, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBicubic).align_corners(false).antialias(true));
        x = x.round().clamp(0, 255); // PIL hands back uint8
    }
    x = x / 255.0;
    const auto mean = torch::tensor({options.mean[0], options.mean[1], options.mean[2]}).view({1, 3, 1, 1});
    const auto stdev = torch::tensor({options.stdev[0], options.stdev[1], options.stdev[2]}).view({1, 3, 1, 1});
    x = (x - mean) / stdev; // [1, 3, H, W]

    // One image fills a whole temporal patch; rows in merge-window-major order.
    const int64_t t = v.temporalPatch, p = v.patchSize, m = v.mergeSize, gh = h / p, gw = w / p;
    auto frames = x.repeat({t, 1, 1, 1}); // [T, C, H, W]
    frames = frames.reshape({1, t, 3, gh / m, m, p, gw / m, m, p}).permute({0, 3, 6, 4, 7, 2, 1, 5, 8});
    ProcessedImage out;
    out.pixels = frames.reshape({gh * gw, 3 * t * p * p}).contiguous();
    out.grid = torch::tensor({int64_t(1), gh, gw}).view({1, 3});
    out.resizedWidth = static_cast<int>(w);
    out.resizedHeight = static_cast<int>(h);
    out.mergeSize = static_cast<int>(m);
    return out;
}

} // namespace ropescope::model

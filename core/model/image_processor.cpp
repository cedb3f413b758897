#include "image_processor.h"

#include <QDir>
#include <QFile>
#include <QImageReader>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace ropescope::model {

int ProcessedImage::tokens() const
{
    return static_cast<int>(grid[0][0].item<int64_t>() * grid[0][1].item<int64_t>() * grid[0][2].item<int64_t>() / 4);
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

PreprocessOptions loadPreprocessOptions(const QString& modelDir)
{
    PreprocessOptions o;
    QFile f(QDir(modelDir).filePath("preprocessor_config.json"));
    if (!f.open(QIODevice::ReadOnly) || f.size() > (1 << 20))
        return o;
    const QJsonObject c = QJsonDocument::fromJson(f.readAll()).object();
    const QJsonObject size = c["size"].toObject();
    const double minPixels = c["min_pixels"].toDouble(size["shortest_edge"].toDouble(static_cast<double>(o.minPixels)));
    const double maxPixels = c["max_pixels"].toDouble(size["longest_edge"].toDouble(static_cast<double>(o.maxPixels)));
    if (minPixels >= 28 * 28 && minPixels < 1e9)
        o.minPixels = static_cast<int64_t>(minPixels);
    if (maxPixels >= static_cast<double>(o.minPixels))
        o.maxPixels = std::min(o.maxPixels, static_cast<int64_t>(std::min(maxPixels, 1e12)));
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
    const auto mean = torch::tensor({0.48145466f, 0.4578275f, 0.40821073f}).view({1, 3, 1, 1});
    const auto stdev = torch::tensor({0.26862954f, 0.26130258f, 0.27577711f}).view({1, 3, 1, 1});
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
    return out;
}

} // namespace ropescope::model

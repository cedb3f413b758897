#include "views/charts/attention_heatmap.h"

#include "views/scene/colormap.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

// Separable Gaussian blur of a rows x cols grid (sigma in cells), edges clamped.
std::vector<float> blur(const std::vector<float>& g, int rows, int cols, double sigma)
{
    if (sigma <= 0)
        return g;
    const int radius = std::max(1, static_cast<int>(std::ceil(3 * sigma)));
    std::vector<double> kernel(static_cast<size_t>(2 * radius + 1));
    double sum = 0;
    for (int i = -radius; i <= radius; ++i)
        sum += kernel[static_cast<size_t>(i + radius)] = std::exp(-0.5 * i * i / (sigma * sigma));
    for (double& k : kernel)
        k /= sum;
    auto at = [&](const std::vector<float>& v, int r, int c) {
        return v[static_cast<size_t>(std::clamp(r, 0, rows - 1) * cols + std::clamp(c, 0, cols - 1))];
    };
    std::vector<float> tmp(g.size()), out(g.size());
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            double s = 0;
            for (int k = -radius; k <= radius; ++k)
                s += kernel[static_cast<size_t>(k + radius)] * at(g, r, c + k);
            tmp[static_cast<size_t>(r * cols + c)] = static_cast<float>(s);
        }
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            double s = 0;
            for (int k = -radius; k <= radius; ++k)
                s += kernel[static_cast<size_t>(k + radius)] * at(tmp, r + k, c);
            out[static_cast<size_t>(r * cols + c)] = static_cast<float>(s);
        }
    return out;
}

Rgb jet(double t)
{
    t = std::clamp(t, 0.0, 1.0);
    auto channel = [](double x) { return static_cast<std::uint8_t>(std::lround(255 * std::clamp(1.5 - std::abs(4 * x), 0.0, 1.0))); };
    return {channel(t - 0.75), channel(t - 0.5), channel(t - 0.25)};
}

// Smooth on the token grid, then upsample bilinearly to w x h (cell centres at (c + 0.5) / cols).
std::vector<float> upsampled(const std::vector<float>& grid, int rows, int cols, int w, int h, double smoothing)
{
    const std::vector<float> smooth = blur(grid, rows, cols, smoothing);
    std::vector<float> up(static_cast<size_t>(w) * h);
    for (int y = 0; y < h; ++y) {
        const double gy = std::clamp((y + 0.5) * rows / h - 0.5, 0.0, rows - 1.0);
        const int y0 = static_cast<int>(gy), y1 = std::min(rows - 1, y0 + 1);
        const double fy = gy - y0;
        for (int x = 0; x < w; ++x) {
            const double gx = std::clamp((x + 0.5) * cols / w - 0.5, 0.0, cols - 1.0);
            const int x0 = static_cast<int>(gx), x1 = std::min(cols - 1, x0 + 1);
            const double fx = gx - x0;
            auto v = [&](int r, int c) { return smooth[static_cast<size_t>(r * cols + c)]; };
            up[static_cast<size_t>(y) * w + x] =
                static_cast<float>((1 - fy) * ((1 - fx) * v(y0, x0) + fx * v(y0, x1)) + fy * ((1 - fx) * v(y1, x0) + fx * v(y1, x1)));
        }
    }
    return up;
}

// Blends colourOf(x, y) over the image with the given opacity.
template <class ColourOf> QImage blend(const QImage& source, double opacity, ColourOf&& colourOf)
{
    const QImage image = source.convertToFormat(QImage::Format_RGB888);
    QImage out(image.width(), image.height(), QImage::Format_RGB888);
    for (int y = 0; y < image.height(); ++y) {
        const uchar* src = image.constScanLine(y);
        uchar* dst = out.scanLine(y);
        for (int x = 0; x < image.width(); ++x) {
            const Rgb c = colourOf(x, y);
            for (int k = 0; k < 3; ++k)
                dst[3 * x + k] = static_cast<uchar>(std::lround((1 - opacity) * src[3 * x + k] + opacity * c[static_cast<size_t>(k)]));
        }
    }
    return out;
}

// Blue (-1) through white (0) to red (+1).
Rgb diverging(double t)
{
    t = std::clamp(t, -1.0, 1.0);
    const auto fade = static_cast<std::uint8_t>(std::lround(255 * (1 - std::abs(t))));
    return t >= 0 ? Rgb{255, fade, fade} : Rgb{fade, fade, 255};
}

std::vector<float> normalisedToSum(std::vector<float> grid)
{
    double sum = 0;
    for (float v : grid)
        sum += v;
    if (sum > 0)
        for (float& v : grid)
            v = static_cast<float>(v / sum);
    return grid;
}

// Where the strip puts images of these sizes: side by side, tops aligned, kPictureGap apart.
QRect placed(const std::vector<QSize>& sizes, size_t k)
{
    int x = 0;
    for (size_t i = 0; i < k; ++i)
        x += sizes[i].width() + kPictureGap;
    return {QPoint(x, 0), sizes.at(k)};
}

std::vector<QSize> sizesOf(const MapPictures& pictures)
{
    std::vector<QSize> sizes;
    for (const MapPicture& p : pictures)
        sizes.push_back(p.image.size());
    return sizes;
}

// Each picture's slice of a map over every picture's cells, smoothed and upsampled to its image.
std::vector<std::vector<float>> upsampledSlices(const MapPictures& pictures, const std::vector<float>& grid, double smoothing)
{
    std::vector<std::vector<float>> out;
    size_t first = 0;
    for (const MapPicture& p : pictures) {
        const size_t cells = static_cast<size_t>(p.rows) * static_cast<size_t>(p.cols);
        const std::vector<float> slice(grid.begin() + static_cast<std::ptrdiff_t>(std::min(first, grid.size())),
                                       grid.begin() + static_cast<std::ptrdiff_t>(std::min(first + cells, grid.size())));
        first += cells;
        if (slice.size() != cells)
            return {};
        out.push_back(upsampled(slice, p.rows, p.cols, p.image.width(), p.image.height(), smoothing));
    }
    return out;
}

// Each picture blended with colourOf(its upsampled value), then laid out as a strip.
template <class ColourOfValue>
QImage blendedStrip(const MapPictures& pictures, const std::vector<std::vector<float>>& up, double opacity, ColourOfValue&& colourOf)
{
    std::vector<QImage> blended;
    for (size_t k = 0; k < pictures.size(); ++k) {
        const int w = pictures[k].image.width();
        blended.push_back(blend(pictures[k].image, opacity, [&](int x, int y) { return colourOf(up[k][static_cast<size_t>(y) * w + x]); }));
    }
    return pictureStrip(blended);
}

} // namespace

QRect pictureRect(const MapPictures& pictures, size_t k)
{
    return placed(sizesOf(pictures), k);
}

QSize stripSize(const MapPictures& pictures)
{
    QSize size;
    for (size_t k = 0; k < pictures.size(); ++k)
        size = size.expandedTo(QSize(pictureRect(pictures, k).right() + 1, pictures[k].image.height()));
    return size;
}

QImage pictureStrip(const std::vector<QImage>& images)
{
    if (images.size() == 1)
        return images.front();
    std::vector<QSize> sizes;
    QSize size;
    for (const QImage& image : images) {
        sizes.push_back(image.size());
        size = size.expandedTo(QSize(placed(sizes, sizes.size() - 1).right() + 1, image.height()));
    }
    QImage strip(size, QImage::Format_RGB888);
    strip.fill(Qt::white);
    QPainter painter(&strip);
    for (size_t k = 0; k < images.size(); ++k)
        painter.drawImage(placed(sizes, k).topLeft(), images[k]);
    return strip;
}

QImage attentionOverlay(const MapPictures& pictures, const std::vector<float>& grid, const HeatmapOptions& o)
{
    const std::vector<std::vector<float>> up = upsampledSlices(pictures, grid, o.smoothing);
    if (up.empty() || pictures.empty())
        return {};
    float lo = up[0].empty() ? 0.0f : up[0][0], hi = lo;
    for (const std::vector<float>& u : up)
        for (float v : u)
            lo = std::min(lo, v), hi = std::max(hi, v);
    const double range = hi > lo ? hi - lo : 1.0;
    return blendedStrip(pictures, up, o.opacity, [&](float v) {
        const double t = std::pow((v - lo) / range, o.gamma);
        return o.colormap == HeatmapOptions::Colormap::Jet ? jet(t) : viridis(t);
    });
}

QImage attentionOverlay(const QImage& source, const std::vector<float>& grid, int rows, int cols, const HeatmapOptions& o)
{
    return attentionOverlay(MapPictures{{source, rows, cols}}, grid, o);
}

QImage attentionDifferenceOverlay(const MapPictures& pictures, const std::vector<float>& from, const std::vector<float>& to,
                                  const HeatmapOptions& o)
{
    const std::vector<float> a = normalisedToSum(from), b = normalisedToSum(to);
    std::vector<float> diff(std::min(a.size(), b.size()));
    for (size_t i = 0; i < diff.size(); ++i)
        diff[i] = b[i] - a[i];
    const std::vector<std::vector<float>> up = upsampledSlices(pictures, diff, o.smoothing);
    if (up.empty() || pictures.empty())
        return {};
    float scale = 0;
    for (const std::vector<float>& u : up)
        for (float v : u)
            scale = std::max(scale, std::abs(v));
    return blendedStrip(pictures, up, o.opacity, [&](float v) {
        const double t = scale > 0 ? v / scale : 0.0;
        return diverging(std::copysign(std::pow(std::abs(t), o.gamma), t));
    });
}

QImage attentionDifferenceOverlay(const QImage& source, const std::vector<float>& from, const std::vector<float>& to, int rows, int cols,
                                  const HeatmapOptions& o)
{
    return attentionDifferenceOverlay(MapPictures{{source, rows, cols}}, from, to, o);
}

QImage hatchHiddenCells(const QImage& overlay, const MapPictures& pictures, const std::vector<uint8_t>& hidden)
{
    size_t cells = 0;
    for (const MapPicture& picture : pictures)
        cells += static_cast<size_t>(picture.rows) * static_cast<size_t>(picture.cols);
    if (cells != hidden.size() || std::all_of(hidden.begin(), hidden.end(), [](uint8_t m) { return m == 0; }))
        return overlay;
    QImage out = overlay.convertToFormat(QImage::Format_RGB888);
    QPainter p(&out);
    p.setPen(Qt::NoPen);
    // White lines, 8 px apart: they stand out on the colormaps' dark low end (a hidden key gets no attention) and on
    // the bright high end alike.
    const QBrush every(QColor(255, 255, 255, 210), Qt::DiagCrossPattern), some(QColor(255, 255, 255, 190), Qt::BDiagPattern);
    size_t next = 0;
    for (size_t k = 0; k < pictures.size(); ++k) {
        const QRect at = pictureRect(pictures, k);
        const MapPicture& picture = pictures[k];
        const double w = static_cast<double>(at.width()) / std::max(1, picture.cols),
                     h = static_cast<double>(at.height()) / std::max(1, picture.rows);
        for (int r = 0; r < picture.rows; ++r)
            for (int c = 0; c < picture.cols; ++c, ++next)
                if (hidden[next] > 0)
                    p.fillRect(QRectF(at.left() + c * w, at.top() + r * h, w, h), hidden[next] == 2 ? every : some);
    }
    return out;
}

QString hiddenCellsLegend(const std::vector<uint8_t>& hidden, int layer, const QString& kind, const QString& rows)
{
    const auto every = std::count(hidden.begin(), hidden.end(), uint8_t(2)), some = std::count(hidden.begin(), hidden.end(), uint8_t(1));
    if (every + some == 0)
        return {};
    QStringList parts;
    if (every > 0)
        parts << QString("crossed from every %1 (%2 of %3)").arg(rows).arg(every).arg(hidden.size());
    if (some > 0)
        parts << QString("lined from some (%1)").arg(some);
    return QString("hatched: image tokens layer %1's mask, %2, hid: %3").arg(layer).arg(kind, parts.join(", "));
}

QImage colourBar(const HeatmapOptions& options, int width, int height)
{
    constexpr int kSteps = 64;
    std::vector<float> ramp(kSteps);
    for (int i = 0; i < kSteps; ++i)
        ramp[static_cast<size_t>(i)] = static_cast<float>(i) / (kSteps - 1);
    HeatmapOptions o = options;
    o.opacity = 1;
    o.smoothing = 0;
    o.gamma = 1;
    QImage white(width, height, QImage::Format_RGB888);
    white.fill(Qt::white);
    return attentionOverlay(white, ramp, 1, kSteps, o);
}

QImage captionedHeatmap(const QImage& overlay, const HeatmapOptions& options, const QStringList& caption)
{
    const int width = std::max(overlay.width(), 360);
    const QImage bar = colourBar(options, std::max(120, width / 2), 14); // as the view shows it

    QFont font;
    font.setPixelSize(13);
    const QFontMetrics metrics(font);
    const int line = metrics.height(), pad = 8;
    const QStringList& lines = caption; // each wrapped to the picture's width: nothing is cut
    const int captionHeight = [&] {
        int h = 0;
        for (const QString& text : lines)
            h += metrics.boundingRect(QRect(0, 0, width - 2 * pad, 1 << 16), Qt::TextWordWrap, text).height();
        return h;
    }();
    QImage out(width, overlay.height() + pad + bar.height() + line + pad + captionHeight + pad, QImage::Format_RGB888);
    out.fill(Qt::white);
    QPainter p(&out);
    p.setFont(font);
    p.drawImage((width - overlay.width()) / 2, 0, overlay);
    int y = overlay.height() + pad;
    const int barX = (width - bar.width()) / 2;
    p.setPen(Qt::black);
    p.drawText(QRect(pad, y, barX - 2 * pad, bar.height()), Qt::AlignRight | Qt::AlignVCenter, "least");
    p.drawImage(barX, y, bar);
    p.drawText(QRect(barX + bar.width() + pad, y, width, bar.height()), Qt::AlignLeft | Qt::AlignVCenter, "most");
    y += bar.height() + line / 2 + pad;
    for (const QString& text : lines) {
        const QRect box = metrics.boundingRect(QRect(pad, y, width - 2 * pad, 1 << 16), Qt::TextWordWrap, text);
        p.drawText(QRect(pad, y, width - 2 * pad, box.height()), Qt::TextWordWrap, text);
        y += box.height();
    }
    return out;
}

} // namespace ropescope::views

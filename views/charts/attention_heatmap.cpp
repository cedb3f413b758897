#include "attention_heatmap.h"

#include "scene/colormap.h"

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

} // namespace

QImage attentionOverlay(const QImage& source, const std::vector<float>& grid, int rows, int cols, const HeatmapOptions& o)
{
    const QImage image = source.convertToFormat(QImage::Format_RGB888);
    const int w = image.width(), h = image.height();
    // Smooth on the token grid, then upsample bilinearly (cell centres at (c + 0.5) / cols).
    const std::vector<float> smooth = blur(grid, rows, cols, o.smoothing);
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
            up[static_cast<size_t>(y) * w + x] = static_cast<float>((1 - fy) * ((1 - fx) * v(y0, x0) + fx * v(y0, x1))
                                                                    + fy * ((1 - fx) * v(y1, x0) + fx * v(y1, x1)));
        }
    }
    const auto [lo, hi] = std::minmax_element(up.begin(), up.end());
    const double range = *hi > *lo ? *hi - *lo : 1.0;
    QImage out(w, h, QImage::Format_RGB888);
    for (int y = 0; y < h; ++y) {
        const uchar* src = image.constScanLine(y);
        uchar* dst = out.scanLine(y);
        for (int x = 0; x < w; ++x) {
            const double t = std::pow((up[static_cast<size_t>(y) * w + x] - *lo) / range, o.gamma);
            const Rgb c = o.colormap == HeatmapOptions::Colormap::Jet ? jet(t) : viridis(t);
            for (int k = 0; k < 3; ++k)
                dst[3 * x + k] = static_cast<uchar>(std::lround((1 - o.opacity) * src[3 * x + k] + o.opacity * c[static_cast<size_t>(k)]));
        }
    }
    return out;
}

} // namespace ropescope::views

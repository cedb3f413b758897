#include "views/charts/mask_chart.h"

#include "views/charts/chart_text.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

constexpr int kPanel = 560; // px a panel at the figure's own size
const QColor kImageBand(150, 60, 190), kQueryBand(214, 40, 40);

// A band along one axis: `marks` per position, drawn where set.
void paintBand(QPainter& p, const QRectF& band, const std::vector<uint8_t>& marks, const QColor& colour, bool vertical)
{
    if (marks.empty())
        return;
    p.fillRect(band, QColor(235, 235, 238));
    const double step = (vertical ? band.height() : band.width()) / static_cast<double>(marks.size());
    for (size_t i = 0; i < marks.size(); ++i) {
        if (!marks[i])
            continue;
        const double at = static_cast<double>(i) * step;
        p.fillRect(vertical ? QRectF(band.left(), band.top() + at, band.width(), step + 0.3)
                            : QRectF(band.left() + at, band.top(), step + 0.3, band.height()),
                   colour);
    }
}

} // namespace

QColor maskCodeColour(int code)
{
    switch (code) {
    case 0: return {70, 110, 200};   // seen, causal
    case 1: return {50, 170, 90};    // seen through an image block
    case 2: return {240, 150, 40};   // hidden by the window
    default: return {246, 246, 248}; // hidden by causality
    }
}

QImage maskImage(const MaskChart::Panel& panel)
{
    const int n = std::max(1, panel.length);
    QImage image(n, n, QImage::Format_RGB32);
    image.fill(maskCodeColour(3));
    if (panel.codes.size() != static_cast<size_t>(panel.length) * static_cast<size_t>(panel.length))
        return image;
    QRgb colours[4];
    for (int c = 0; c < 4; ++c)
        colours[c] = maskCodeColour(c).rgb();
    for (int q = 0; q < panel.length; ++q) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(q));
        for (int k = 0; k < panel.length; ++k)
            line[k] = colours[std::min<int>(panel.codes[static_cast<size_t>(q) * panel.length + k], 3)];
    }
    return image;
}

void paintMaskChart(QPainter& p, const QRectF& area, const MaskChart& chart)
{
    p.save();
    const QRectF plot = chart::titled(p, area, chart.title);
    chart::setFont(p, area, 0.55);
    const QFontMetricsF fm(p.font());
    const double line = fm.height() * 1.3, band = std::max(6.0, fm.height() * 0.5), gap = fm.height();
    const int n = std::max<int>(1, static_cast<int>(chart.panels.size()));
    const double legendHeight = 2 * line;
    const double side =
        std::max(10.0, std::min((plot.width() - (n + 1) * gap) / n - 2 * band, plot.height() - line - legendHeight - 2 * band - gap));
    p.setRenderHint(QPainter::SmoothPixmapTransform, false); // one cell a token pair, never blurred
    for (int i = 0; i < static_cast<int>(chart.panels.size()); ++i) {
        const MaskChart::Panel& panel = chart.panels[static_cast<size_t>(i)];
        const double left = plot.left() + gap + i * (side + 2 * band + gap);
        p.setPen(chart::kInk);
        chart::captionLine(p, QRectF(left, plot.top(), side + 2 * band, line), Qt::AlignLeft | Qt::AlignVCenter, panel.label);
        const QRectF cells(left + 2 * band, plot.top() + line + 2 * band, side, side);
        p.drawImage(cells, maskImage(panel));
        // Top: keys that are image tokens; left: image-token queries, then the captured query rows.
        paintBand(p, QRectF(cells.left(), cells.top() - band - 1, side, band), chart.imageTokens, kImageBand, false);
        paintBand(p, QRectF(cells.left() - band - 1, cells.top(), band, side), chart.imageTokens, kImageBand, true);
        paintBand(p, QRectF(cells.left() - 2 * band - 2, cells.top(), band, side), chart.queryRows, kQueryBand, true);
        p.setPen(QColor(120, 120, 128));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cells);
    }
    // The legend: the four codes and the two bands.
    const std::pair<QColor, QString> entries[] = {{maskCodeColour(0), "seen (causal)"},
                                                  {maskCodeColour(1), "seen through the image block (a later key)"},
                                                  {maskCodeColour(2), "hidden by the sliding window"},
                                                  {QColor(200, 200, 206), "hidden by causality"},
                                                  {kImageBand, "image tokens (top, left)"},
                                                  {kQueryBand, "the question rows the maps average"}};
    double x = plot.left() + gap, y = plot.top() + line + 2 * band + side + gap * 0.6;
    for (const auto& [colour, text] : entries) {
        const double width = fm.height() * 1.1 + fm.horizontalAdvance(text) + gap;
        if (x > plot.left() + gap && x + width > plot.right()) {
            x = plot.left() + gap;
            y += line;
        }
        p.fillRect(QRectF(x, y + fm.height() * 0.2, fm.height() * 0.7, fm.height() * 0.7), colour);
        p.setPen(chart::kInk);
        p.drawText(QPointF(x + fm.height() * 0.9, y + fm.ascent()), text);
        x += width;
    }
    p.restore();
}

QSize maskChartSize(const MaskChart& chart)
{
    const int n = std::max<int>(1, static_cast<int>(chart.panels.size()));
    return {n * (kPanel + 60) + 40, kPanel + 190};
}

} // namespace ropescope::views

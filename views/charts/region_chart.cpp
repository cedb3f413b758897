#include "views/charts/region_chart.h"

#include "views/charts/chart_text.h"
#include "views/scene/colormap.h"

#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

const QColor kQuestion(60, 100, 170), kAnswer(200, 90, 30), kChance(120, 120, 120);

QColor shade(double t)
{
    const Rgb c = viridis(t);
    return QColor(c[0], c[1], c[2]);
}

} // namespace

QImage outlineCells(const QImage& image, int rows, int cols, const std::vector<int>& cells)
{
    QImage out = image.convertToFormat(QImage::Format_RGB888);
    if (rows <= 0 || cols <= 0)
        return out;
    const double w = static_cast<double>(out.width()) / cols, h = static_cast<double>(out.height()) / rows;
    QPainterPath region;
    for (int c : cells)
        region.addRect(QRectF((c % cols) * w, (c / cols) * h, w, h));
    region = region.simplified();
    QPainter p(&out);
    p.setRenderHint(QPainter::Antialiasing);
    QPainterPath outside;
    outside.addRect(QRectF(out.rect()));
    p.fillPath(outside.subtracted(region), QColor(0, 0, 0, 110));
    p.setPen(QPen(QColor(255, 230, 0), std::max(1.5, out.width() / 150.0)));
    p.drawPath(region);
    return out;
}

QSize regionChartSize(const RegionChart& chart)
{
    const int tokens = static_cast<int>(chart.tokens.size());
    return {std::clamp(480 + 40 * tokens, 960, 2400), 520 + 16 * std::min<int>(static_cast<int>(chart.layers.size()), 40)};
}

QImage outlineCells(const MapPictures& pictures, int picture, const std::vector<int>& cells)
{
    std::vector<QImage> images;
    for (size_t k = 0; k < pictures.size(); ++k)
        images.push_back(outlineCells(pictures[k].image, pictures[k].rows, pictures[k].cols,
                                      static_cast<int>(k) == picture ? cells : std::vector<int>{}));
    return pictureStrip(images);
}

RegionLayout regionLayout(const QRectF& area, QSize imageSize)
{
    // The title band of chart::titled, computed without a painter so that clicks map back exactly; gaps of
    // about a line of the title's size.
    QFont title;
    title.setPixelSize(std::max(9, static_cast<int>(std::min(area.height() / 18.0, area.width() / 30.0))));
    title.setBold(true);
    const QRectF plot = area.adjusted(0, 1.6 * QFontMetricsF(title).height(), 0, 0);
    const double aspect =
        imageSize.height() > 0 && imageSize.width() > 0 ? static_cast<double>(imageSize.width()) / imageSize.height() : 1.0;
    const double gap = title.pixelSize() * 1.2;
    RegionLayout l;
    if (plot.width() >= 1.3 * plot.height()) {
        double height = std::min(plot.height() * 0.5, plot.width() * 0.36);
        const double width = std::min(height * aspect, plot.width() * 0.5); // a strip of several images grows wider first
        height = width / aspect;
        l.picture = QRectF(plot.left(), plot.top(), width, height);
        l.charts = QRectF(l.picture.right() + gap, plot.top(), plot.right() - l.picture.right() - gap, plot.height());
    } else {
        const double width = std::min(plot.width(), plot.height() * 0.36 * aspect), height = width / aspect;
        l.picture = QRectF(plot.left() + (plot.width() - width) / 2, plot.top(), width, height);
        const double below = l.picture.bottom() + 2.5 * gap; // the region's caption
        l.charts = QRectF(plot.left(), below, plot.width(), plot.bottom() - below);
    }
    return l;
}

QRectF regionPictureRect(const QRectF& area, QSize imageSize)
{
    return regionLayout(area, imageSize).picture;
}

PictureCell regionCellAt(const QRectF& area, const MapPictures& pictures, QPointF point)
{
    const QSize strip = stripSize(pictures);
    const QRectF drawn = regionPictureRect(area, strip);
    if (pictures.empty() || strip.isEmpty() || !drawn.contains(point))
        return {};
    const QPointF at((point.x() - drawn.left()) * strip.width() / drawn.width(),
                     (point.y() - drawn.top()) * strip.height() / drawn.height());
    for (size_t k = 0; k < pictures.size(); ++k) {
        const QRect r = pictureRect(pictures, k);
        const int rows = pictures[k].rows, cols = pictures[k].cols;
        if (rows <= 0 || cols <= 0 || at.x() < r.left() || at.x() >= r.left() + r.width() || at.y() >= r.height())
            continue;
        const int row = std::clamp(static_cast<int>(at.y() / r.height() * rows), 0, rows - 1);
        const int col = std::clamp(static_cast<int>((at.x() - r.left()) / r.width() * cols), 0, cols - 1);
        return {static_cast<int>(k), row * cols + col};
    }
    return {};
}

void paintRegionChart(QPainter& p, const QRectF& area, const RegionChart& chart, const QString& hint)
{
    chart::titled(p, area, chart.title);
    p.setRenderHint(QPainter::Antialiasing);
    chart::setFont(p, area, 0.85);
    const QFontMetricsF fm(p.font());
    const double gap = fm.height();

    // The picture with the region; the charts beside it or below it.
    const RegionLayout layout = regionLayout(area, chart.image.size());
    const QRectF picture = layout.picture, charts = layout.charts;
    if (!chart.image.isNull())
        p.drawImage(picture, chart.image);
    p.setPen(chart::kInk);
    const auto tokens = static_cast<int>(chart.tokens.size()), layers = static_cast<int>(chart.layers.size());
    if (tokens == 0 || layers == 0) {
        p.setPen(Qt::darkGray);
        p.drawText(
            QRectF(charts.left(), charts.top(), charts.width() - gap, std::min(charts.height(), std::max(picture.height(), 4 * gap))),
            Qt::AlignCenter | Qt::TextWordWrap, hint);
        return;
    }
    // Under the picture, wrapped to its width and a little more, never past the figure's edges (it lost its first
    // letters at the left edge).
    const double captionLeft = std::max(area.left(), picture.left() - gap);
    p.drawText(QRectF(captionLeft, picture.bottom() + 4, std::min(area.right(), picture.right() + gap) - captionLeft, 3 * gap),
               Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap,
               QString("region: %1% of the image tokens").arg(100 * chart.area, 0, 'f', 1));

    // The charts: a labels column, then one column per token.
    const double labelWidth = fm.horizontalAdvance("layer 00 ") + 4;
    const double left = charts.left() + labelWidth, width = charts.right() - left;
    const double column = width / tokens;
    const bool slanted =
        std::any_of(chart.tokens.begin(), chart.tokens.end(), [&](const QString& t) { return fm.horizontalAdvance(t) > column - 2; });
    const double labelsHeight = slanted ? std::min(charts.height() * 0.25, 0.75 * fm.horizontalAdvance("w") * 12) : gap * 1.4;

    // The strip: layers x tokens, one colour scale (0 .. the largest share) over all of it.
    double top = 0;
    for (const auto& row : chart.share)
        for (double s : row)
            top = std::max(top, s);
    top = top > 0 ? top : 1;
    const double stripHeight = std::min(charts.height() * 0.35, layers * std::max(6.0, gap * 1.05));
    const double rowHeight = stripHeight / layers;
    const int labelEvery = std::max(1, static_cast<int>(std::ceil(gap / rowHeight)));
    for (int l = 0; l < layers; ++l) {
        const double y = charts.top() + l * rowHeight;
        for (int t = 0; t < tokens; ++t)
            p.fillRect(QRectF(left + t * column, y, column + 0.5, rowHeight + 0.5),
                       shade(chart.share[static_cast<size_t>(l)][static_cast<size_t>(t)] / top));
        if (l % labelEvery == 0 || l == chart.shownLayer) {
            p.setPen(l == chart.shownLayer ? kAnswer : chart::kInk);
            p.drawText(QRectF(left - labelWidth, y + rowHeight / 2 - gap / 2, labelWidth - 4, gap), Qt::AlignRight | Qt::AlignVCenter,
                       QString("layer %1").arg(chart.layers[static_cast<size_t>(l)]));
        }
    }
    if (chart.shownLayer >= 0 && chart.shownLayer < layers) {
        p.setPen(QPen(kAnswer, 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(left, charts.top() + chart.shownLayer * rowHeight, width, rowHeight));
    }

    // The bars: the shown layer's shares, 0 .. 1 with the region's area as the reference.
    const double barsTop = charts.top() + stripHeight + 3.2 * gap;
    const QRectF bars(left, barsTop, width, charts.bottom() - labelsHeight - barsTop);
    const size_t shown = static_cast<size_t>(std::clamp(chart.shownLayer, 0, layers - 1));
    double scaleTop = std::max(chart.area, 0.0);
    for (double s : chart.share[shown])
        scaleTop = std::max(scaleTop, s);
    scaleTop = std::min(1.0, std::max(0.05, std::ceil(scaleTop * 10.5) / 10));
    p.setPen(chart::kInk);
    const QString caption = QString("layer %1: share of each token's image attention in the region").arg(chart.layers[shown]);
    p.save();
    chart::fitFont(p, caption, width + labelWidth);
    p.drawText(QRectF(left - labelWidth, bars.top() - gap * 2.6, width + labelWidth, gap * 1.4), Qt::AlignLeft | Qt::AlignVCenter, caption);
    p.restore();
    p.drawLine(QPointF(bars.left(), bars.bottom()), QPointF(bars.right(), bars.bottom()));
    p.drawLine(QPointF(bars.left(), bars.bottom()), QPointF(bars.left(), bars.top()));
    p.drawText(QRectF(bars.left() - labelWidth, bars.bottom() - gap / 2, labelWidth - 4, gap), Qt::AlignRight | Qt::AlignVCenter, "0");
    p.drawText(QRectF(bars.left() - labelWidth, bars.top() - gap / 2, labelWidth - 4, gap), Qt::AlignRight | Qt::AlignVCenter,
               chart::number(scaleTop));
    for (int t = 0; t < tokens; ++t) {
        const double s = chart.share[shown][static_cast<size_t>(t)];
        const double h = bars.height() * std::min(1.0, s / scaleTop);
        const bool answer = static_cast<size_t>(t) < chart.answer.size() && chart.answer[static_cast<size_t>(t)];
        p.fillRect(QRectF(bars.left() + t * column + column * 0.15, bars.bottom() - h, column * 0.7, h), answer ? kAnswer : kQuestion);
        p.save();
        p.setPen(answer ? kAnswer : chart::kInk);
        const QPointF at(bars.left() + (t + 0.5) * column, bars.bottom() + 4);
        if (slanted) {
            p.translate(at);
            p.rotate(-45);
            p.drawText(QRectF(-labelsHeight * 1.4, -gap / 2, labelsHeight * 1.4, gap), Qt::AlignRight | Qt::AlignVCenter, chart.tokens[t]);
        } else {
            p.drawText(QRectF(at.x() - column / 2, at.y(), column, gap), Qt::AlignHCenter | Qt::AlignTop, chart.tokens[t]);
        }
        p.restore();
    }
    const double chanceY = bars.bottom() - bars.height() * std::min(1.0, chart.area / scaleTop);
    p.setPen(QPen(kChance, 1.5, Qt::DashLine));
    p.drawLine(QPointF(bars.left(), chanceY), QPointF(bars.right(), chanceY));
    // Named in the axis margin, where no bar can cover it (inside the plot it sat on the last bars), unless it
    // would overlap the axis' own 0 or top label.
    if (std::abs(chanceY - bars.bottom()) > gap && std::abs(chanceY - bars.top()) > gap)
        p.drawText(QRectF(bars.left() - labelWidth, chanceY - gap / 2, labelWidth - 4, gap), Qt::AlignRight | Qt::AlignVCenter, "area");
}

} // namespace ropescope::views

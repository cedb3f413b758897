#include "views/charts/expert_usage_chart.h"

#include "views/charts/chart_text.h"
#include "views/scene/colormap.h"

#include <QFontMetricsF>
#include <QImage>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

constexpr int kPanels = 3;

// Where each panel's cells sit in `area`: a title band, then per panel a caption line and the cells, with room
// for layer labels on the left and a colour-scale note on the right.
struct Layout {
    QRectF cells[kPanels];
    double cellWidth = 0, cellHeight = 0, caption = 0, labels = 0;
};

Layout layoutOf(QPainter& p, const QRectF& area, const ExpertUsageGrid& g)
{
    Layout l;
    const QRectF plot = chart::titled(p, area, g.title);
    chart::setFont(p, area); // the title's bold font stays with the title
    const QFontMetricsF fm(p.font());
    l.caption = fm.height() * 1.3;
    l.labels = fm.horizontalAdvance("L000") + 6;
    const double rows = static_cast<double>(std::max<size_t>(1, g.layers.size())), experts = std::max(1, g.experts);
    l.cellWidth = std::max(1.0, (plot.width() - l.labels - 8) / experts);
    const double bottom = fm.height() * 1.4; // expert ids under the last panel
    l.cellHeight = std::max(1.0, (plot.height() - bottom - kPanels * l.caption - (kPanels - 1) * 6) / (kPanels * rows));
    double top = plot.top();
    for (auto& cells : l.cells) {
        top += l.caption;
        cells = QRectF(plot.left() + l.labels, top, l.cellWidth * experts, l.cellHeight * rows);
        top = cells.bottom() + 6;
    }
    return l;
}

QColor shareColour(double v, double max)
{
    const Rgb rgb = viridis(max > 0 ? std::clamp(v / max, 0.0, 1.0) : 0.0);
    return QColor(rgb[0], rgb[1], rgb[2]);
}

QColor differenceColour(double v, double max) // white at 0, red for images, blue for text
{
    const double t = max > 0 ? std::clamp(v / max, -1.0, 1.0) : 0.0;
    const int fade = static_cast<int>(std::round(255 * (1 - std::abs(t))));
    return t >= 0 ? QColor(255, fade, fade) : QColor(fade, fade, 255);
}

double maxOf(const std::vector<std::vector<double>>& m, bool absolute)
{
    double best = 0;
    for (const auto& row : m)
        for (double v : row)
            best = std::max(best, absolute ? std::abs(v) : v);
    return best;
}

} // namespace

void paintExpertUsage(QPainter& p, const QRectF& area, const ExpertUsageGrid& g)
{
    const Layout l = layoutOf(p, area, g);
    std::vector<std::vector<double>> difference = g.image;
    for (size_t r = 0; r < difference.size() && r < g.text.size(); ++r)
        for (size_t e = 0; e < difference[r].size() && e < g.text[r].size(); ++e)
            difference[r][e] -= g.text[r][e];
    const std::vector<std::vector<double>>* values[kPanels] = {&g.image, &g.text, &difference};
    const double shareMax = std::max(maxOf(g.image, false), maxOf(g.text, false)), diffMax = maxOf(difference, true);
    const QString captions[kPanels] = {QString("image tokens: share routed to each expert (viridis, 0 .. %1)").arg(chart::number(shareMax)),
                                       QString("text tokens: share routed to each expert (same scale)"),
                                       QString("image - text (red: more image, blue: more text, +/- %1)").arg(chart::number(diffMax))};
    const QFontMetricsF fm(p.font());
    const int layerStep = std::max(1, static_cast<int>(std::ceil(fm.height() / l.cellHeight)));
    const int expertStep = std::max(1, static_cast<int>(std::ceil(fm.horizontalAdvance("000 ") / l.cellWidth)));
    for (int panel = 0; panel < kPanels; ++panel) {
        const QRectF& cells = l.cells[panel];
        p.setPen(chart::kInk);
        chart::captionLine(p, QRectF(cells.left(), cells.top() - l.caption, cells.width(), l.caption), Qt::AlignLeft | Qt::AlignVCenter,
                           captions[panel]);
        for (size_t r = 0; r < g.layers.size(); ++r) {
            if (r % static_cast<size_t>(layerStep) == 0)
                p.drawText(QRectF(area.left(), cells.top() + static_cast<double>(r) * l.cellHeight, l.labels - 4, l.cellHeight),
                           Qt::AlignRight | Qt::AlignVCenter, "L" + QString::number(g.layers[r]));
            const auto& row = (*values[panel])[r];
            for (int e = 0; e < g.experts && e < static_cast<int>(row.size()); ++e) {
                const QRectF cell(cells.left() + e * l.cellWidth, cells.top() + static_cast<double>(r) * l.cellHeight, l.cellWidth,
                                  l.cellHeight);
                p.fillRect(cell,
                           panel == 2 ? differenceColour(row[static_cast<size_t>(e)], diffMax)
                                      : shareColour(row[static_cast<size_t>(e)], shareMax));
            }
        }
        p.setPen(QPen(chart::kInk, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cells);
        if (g.selectedRow >= 0 && g.selectedExpert >= 0) {
            p.setPen(QPen(QColor(255, 140, 0), 2));
            p.drawRect(QRectF(cells.left() + g.selectedExpert * l.cellWidth, cells.top() + g.selectedRow * l.cellHeight, l.cellWidth,
                              l.cellHeight));
        }
    }
    p.setPen(chart::kInk);
    const QRectF& last = l.cells[kPanels - 1];
    // Each id centred under its own cell (they started at its left boundary and read as the line between two: issue 72 item 9).
    const double idWidth = fm.horizontalAdvance("0000");
    for (int e = 0; e < g.experts; e += expertStep)
        p.drawText(QRectF(last.left() + (e + 0.5) * l.cellWidth - idWidth / 2, last.bottom() + 2, idWidth, fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, QString::number(e));
}

QSize expertUsageFigureSize(const ExpertUsageGrid& g)
{
    // A figure for a page or a slide: a few layers and experts get big cells, not a 640x324 thumbnail (issue 72 item 6).
    const int cell = std::clamp(1400 / std::max(1, g.experts), 3, 48);
    const int row = std::clamp(480 / std::max<int>(1, static_cast<int>(g.layers.size())), 8, 48);
    const int width = std::max(960, cell * g.experts + 80);
    const int height = kPanels * (row * static_cast<int>(std::max<size_t>(1, g.layers.size())) + 30) + 90;
    return {width, height};
}

std::pair<int, int> expertUsageAt(const QRectF& area, const ExpertUsageGrid& g, QPointF point)
{
    QImage scratch(1, 1, QImage::Format_RGB32); // the same fonts as painting, for the same layout
    QPainter p(&scratch);
    chart::setFont(p, area);
    const Layout l = layoutOf(p, area, g);
    for (const QRectF& cells : l.cells)
        if (cells.contains(point)) {
            const int row = static_cast<int>((point.y() - cells.top()) / l.cellHeight);
            const int expert = static_cast<int>((point.x() - cells.left()) / l.cellWidth);
            if (row < static_cast<int>(g.layers.size()) && expert < g.experts)
                return {row, expert};
        }
    return {-1, -1};
}

} // namespace ropescope::views

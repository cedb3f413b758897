#include "views/charts/charts.h"

#include "views/charts/chart_text.h"

#include "views/scene/colormap.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

using chart::fitFont;
using chart::kInk;
using chart::number;
using chart::setFont;
using chart::titled;

const QColor kGrid(220, 220, 226);
const QColor kAccent(214, 75, 40);
const QColor kBar(70, 110, 170);

// The title and a one-line subtitle under it; leaves the font at `scale` and returns the area below
// the title (the subtitle's line included: callers step past it).
QRectF titledWithSubtitle(QPainter& p, const QRectF& area, const QString& title, const QString& subtitle, double scale)
{
    const QRectF plot = titled(p, area, title);
    setFont(p, area, scale);
    const double lineHeight = QFontMetricsF(p.font()).height();
    p.setPen(kInk);
    const double used = chart::fittedLines(p, plot.left() + 4, plot.top(), plot.width() - 8, subtitle);
    setFont(p, area, scale);
    return plot.adjusted(0, used - lineHeight, 0, 0); // callers step past one line; a second is added here
}

// The widest tick label of a value axis, so the plot leaves room for all of them.
double axisLabelWidth(const QFontMetricsF& fm, double lo, double hi, int ticks)
{
    double width = 0;
    for (int i = 0; i <= ticks; ++i)
        width = std::max(width, fm.horizontalAdvance(number(lo + (hi - lo) * i / ticks)));
    return width;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten at or above v.
double niceCeiling(double v)
{
    if (!(v > 0))
        return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v)
            return m * p;
    return 10 * p;
}

void drawValueAxis(QPainter& p, const QRectF& plot, double lo, double hi, int ticks)
{
    setFont(p, plot, 0.8);
    const QFontMetricsF fm(p.font());
    const double labelWidth = axisLabelWidth(fm, lo, hi, ticks);
    for (int i = 0; i <= ticks; ++i) {
        const double v = lo + (hi - lo) * i / ticks;
        const double y = plot.bottom() - plot.height() * i / ticks;
        p.setPen(kGrid);
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
        p.setPen(kInk);
        p.drawText(QRectF(plot.left() - labelWidth - 6, y - fm.height() / 2, labelWidth, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   number(v));
    }
}

} // namespace

void paintBarChart(QPainter& p, const QRectF& area, const BarChart& chart)
{
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    QRectF plot = titled(p, area, chart.title);
    setFont(p, area, 0.8);
    const QFontMetricsF fm(p.font());
    const double top = niceCeiling(chart.values.empty() ? 1.0 : *std::max_element(chart.values.begin(), chart.values.end()));
    const int n = static_cast<int>(chart.values.size());
    // Labels that do not fit under their bars (many schemes in a narrow panel) are drawn slanted at 45
    // degrees in a taller margin instead of being shrunk or elided to nothing.
    const double valueAxis = axisLabelWidth(fm, 0, top, 4) + 10;
    const double flatSlot = n ? (plot.width() - valueAxis - 8) / n : 0;
    double widest = 0;
    for (const QString& label : chart.labels)
        widest = std::max(widest, fm.horizontalAdvance(label));
    const bool slanted = n > 0 && widest > flatSlot - 2;
    const double slantReach = std::min(widest * 0.72 + fm.height(), plot.height() * 0.45); // room below the axis
    // Slanted mode also stands the values on end above their bars: room for the longest above the top.
    double widestValue = 0;
    for (double v : chart.values)
        widestValue = std::max(widestValue, fm.horizontalAdvance(number(std::max(0.0, v))));
    plot.adjust(valueAxis, slanted ? widestValue + fm.height() * 0.4 : fm.height() * 1.4, -8, slanted ? -slantReach : -fm.height() * 1.8);
    drawValueAxis(p, plot, 0, top, 4);

    const double slot = n ? plot.width() / n : 0;
    for (int i = 0; i < n; ++i) {
        const double v = std::max(0.0, chart.values[static_cast<size_t>(i)]);
        const double h = plot.height() * v / top;
        const QRectF bar(plot.left() + slot * (i + 0.18), plot.bottom() - h, slot * 0.64, h);
        p.fillRect(bar, i == chart.highlighted ? kAccent : kBar);
        p.setPen(kInk);
        setFont(p, area, 0.8, i == chart.highlighted);
        if (slanted) {
            p.save();
            p.translate(bar.center().x() + fm.height() * 0.35, bar.top() - 3);
            p.rotate(-90);
            p.drawText(QPointF(0, 0), number(v));
            p.restore();
        } else {
            fitFont(p, number(v), slot);
            p.drawText(QRectF(bar.left() - slot * 0.2, bar.top() - fm.height() * 1.2, slot, fm.height()), Qt::AlignCenter, number(v));
        }
        setFont(p, area, 0.8, i == chart.highlighted);
        if (slanted) {
            // Ends under the bar's centre, running down-left; elided only past the margin's diagonal.
            const QString label = QFontMetricsF(p.font()).elidedText(chart.labels[static_cast<size_t>(i)], Qt::ElideMiddle,
                                                                     (slantReach - fm.height() * 0.3) / 0.72);
            p.save();
            p.translate(plot.left() + slot * (i + 0.5) + fm.height() * 0.25, plot.bottom() + 4);
            p.rotate(-45);
            const double w = QFontMetricsF(p.font()).horizontalAdvance(label);
            p.drawText(QRectF(-w, 0, w, fm.height()), Qt::AlignRight | Qt::AlignTop, label);
            p.restore();
            continue;
        }
        fitFont(p, chart.labels[static_cast<size_t>(i)], slot - 2); // narrow panels: smaller, never overlapping
        const QString label = QFontMetricsF(p.font()).elidedText(chart.labels[static_cast<size_t>(i)], Qt::ElideMiddle, slot - 2);
        p.drawText(QRectF(plot.left() + slot * i, plot.bottom() + 4, slot, fm.height() * 1.3), Qt::AlignCenter, label);
    }
    p.setPen(kInk);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.restore();
}

void paintProfileChart(QPainter& p, const QRectF& area, const ProfileChart& chart)
{
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    QRectF plot = titled(p, area, chart.title);
    setFont(p, area, 0.8);
    const QFontMetricsF fm(p.font());
    static const QString caption = "text tokens in order (band: min-max distance to visual tokens, line: mean)";
    const double left = fm.horizontalAdvance("00000.0") + 10;
    // The caption wraps onto a second line in a narrow dock rather than losing its end.
    const double captionHeight = chart::fittedLinesHeight(p.font(), plot.width() - left - 10, caption);
    plot.adjust(left, fm.height() * 0.6, -10, -(fm.height() * 1.4 + captionHeight));
    const int n = static_cast<int>(chart.profile.rows());
    if (n == 0) {
        p.restore();
        return;
    }
    const double top = niceCeiling(chart.profile.col(2).maxCoeff());
    drawValueAxis(p, plot, 0, top, 4);
    auto x = [&](double row) { return n == 1 ? plot.center().x() : plot.left() + plot.width() * row / (n - 1); };
    auto y = [&](double v) { return plot.bottom() - plot.height() * v / top; };

    // min-max band, then the mean line
    QPainterPath band;
    band.moveTo(x(0), y(chart.profile(0, 2)));
    for (int i = 1; i < n; ++i)
        band.lineTo(x(i), y(chart.profile(i, 2)));
    for (int i = n - 1; i >= 0; --i)
        band.lineTo(x(i), y(chart.profile(i, 0)));
    band.closeSubpath();
    p.fillPath(band, QColor(70, 110, 170, 60));
    QPainterPath mean;
    mean.moveTo(x(0), y(chart.profile(0, 1)));
    for (int i = 1; i < n; ++i)
        mean.lineTo(x(i), y(chart.profile(i, 1)));
    p.setPen(QPen(kBar, std::max(1.5, area.height() / 250.0)));
    p.drawPath(mean);

    // where the visual tokens sit between text tokens
    p.setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));
    for (int g : chart.gapsBefore)
        if (g > 0 && g < n)
            p.drawLine(QPointF(x(g - 0.5), plot.top()), QPointF(x(g - 0.5), plot.bottom()));

    if (chart.selectedRow >= 0 && chart.selectedRow < n) {
        const int s = chart.selectedRow;
        p.setPen(QPen(kAccent, 2));
        p.drawLine(QPointF(x(s), y(chart.profile(s, 0))), QPointF(x(s), y(chart.profile(s, 2))));
        p.setBrush(kAccent);
        const double r = std::max(3.0, area.height() / 90.0);
        p.drawEllipse(QPointF(x(s), y(chart.profile(s, 1))), r, r);
    }
    p.setPen(kInk);
    p.drawText(QRectF(plot.left(), plot.bottom() + 4, plot.width(), fm.height()), Qt::AlignLeft,
               QString("token %1").arg(chart.tokens.front()));
    p.drawText(QRectF(plot.left(), plot.bottom() + 4, plot.width(), fm.height()), Qt::AlignRight,
               QString("token %1").arg(chart.tokens.back()));
    chart::fittedLines(p, plot.left(), plot.bottom() + 4 + fm.height(), plot.width(), caption);
    p.restore();
}

void paintHeatmapChart(QPainter& p, const QRectF& area, const HeatmapChart& chart)
{
    p.save();
    QRectF plot = titledWithSubtitle(p, area, chart.title, chart.subtitle, 0.8);
    const QFontMetricsF fm(p.font());
    plot.adjust(8, fm.height() * 1.5, -8, -fm.height() * 3.2);
    if (chart.grids.empty()) {
        p.restore();
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& g : chart.grids)
        for (double v : g.values) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    const double range = hi > lo ? hi - lo : 1.0;

    // Grids side by side with square cells as large as fit.
    const int count = static_cast<int>(chart.grids.size());
    int totalCols = 0, maxRows = 0;
    for (const auto& g : chart.grids) {
        totalCols += g.cols;
        maxRows = std::max(maxRows, g.rows);
    }
    const double gap = 0.6;
    const double cell = std::min(plot.width() / (totalCols + gap * (count - 1)), (plot.height() - fm.height()) / maxRows);
    const double usedWidth = cell * (totalCols + gap * (count - 1));
    double left = plot.left() + (plot.width() - usedWidth) / 2;
    for (const auto& g : chart.grids) {
        for (int r = 0; r < g.rows; ++r)
            for (int c = 0; c < g.cols; ++c) {
                const Rgb rgb = viridis((g.values[static_cast<size_t>(r * g.cols + c)] - lo) / range);
                p.fillRect(QRectF(left + c * cell, plot.top() + r * cell, cell + 0.5, cell + 0.5), QColor(rgb[0], rgb[1], rgb[2]));
            }
        p.setPen(kInk);
        p.drawText(QRectF(left, plot.top() + g.rows * cell + 2, g.cols * cell, fm.height()), Qt::AlignCenter, g.label);
        left += (g.cols + gap) * cell;
    }

    // Colour bar, its end values beside it: the bar leaves them the room they need at any font size.
    const QString loText = number(lo), hiText = number(hi);
    const double loWidth = fm.horizontalAdvance(loText) + 6, hiWidth = fm.horizontalAdvance(hiText) + 6;
    const double barWidth = std::min(area.width() * 0.6, area.width() - 2 * std::max(loWidth, hiWidth) - 16);
    const QRectF bar(area.center().x() - barWidth / 2, area.bottom() - fm.height() * 1.9, barWidth, fm.height() * 0.6);
    for (int i = 0; i < 100; ++i) {
        const Rgb rgb = viridis(i / 99.0);
        p.fillRect(QRectF(bar.left() + bar.width() * i / 100, bar.top(), bar.width() / 100 + 0.5, bar.height()),
                   QColor(rgb[0], rgb[1], rgb[2]));
    }
    p.setPen(kInk);
    p.drawText(QRectF(bar.left() - loWidth, bar.top() - fm.height(), loWidth - 4, bar.height() + 2 * fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, loText);
    p.drawText(QRectF(bar.right() + 4, bar.top() - fm.height(), hiWidth, bar.height() + 2 * fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               hiText);
    p.restore();
}

void paintFrequencyChart(QPainter& p, const QRectF& area, const FrequencyChart& chart)
{
    static const QColor axisColours[] = {QColor(214, 39, 40), QColor(44, 160, 44), QColor(31, 119, 180), QColor(148, 103, 189)};
    static const QColor useColours[] = {QColor(40, 40, 46), QColor(150, 150, 160), QColor(240, 240, 244)};
    static const char* useNames[] = {"wraps", "resolves", "constant"};
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    QRectF plot = titledWithSubtitle(p, area, chart.title, chart.subtitle, 0.6);
    const QFontMetricsF fm(p.font());
    plot.adjust(10, fm.height() * 1.4, -10, 0);
    const int n = static_cast<int>(chart.pairAxis.size());
    if (n == 0) {
        p.restore();
        return;
    }

    // Strips: axis per pair, then its use across the grids.
    const double cell = plot.width() / n, stripHeight = std::max(8.0, plot.height() * 0.09);
    // A pair that never turns (Gemma 4's proportional rotary: frequency 0) is pale grey, hatched, in both strips.
    const QColor unrotated(232, 232, 236);
    const QBrush unrotatedHatch(QColor(150, 150, 160), Qt::BDiagPattern);
    for (int j = 0; j < n; ++j) {
        const bool turns = chart.pairAxis[static_cast<size_t>(j)] >= 0;
        const QRectF axisCell(plot.left() + j * cell, plot.top(), cell + 0.3, stripHeight);
        p.fillRect(axisCell, turns ? axisColours[std::min(chart.pairAxis[static_cast<size_t>(j)], 3)] : unrotated);
        const QRectF useCell(plot.left() + j * cell, plot.top() + stripHeight + 2, cell + 0.3, stripHeight * 0.6);
        p.fillRect(useCell, turns ? useColours[std::clamp(chart.pairUse[static_cast<size_t>(j)], 0, 2)] : unrotated);
        if (!turns) {
            p.fillRect(axisCell, unrotatedHatch);
            p.fillRect(useCell, unrotatedHatch);
        }
    }
    p.setPen(kGrid);
    p.drawRect(QRectF(plot.left(), plot.top() + stripHeight + 2, plot.width(), stripHeight * 0.6));
    // Legend: axis colours and use shades, with counts.
    // Legend: an entry that would pass the right edge starts a new line (a narrow dock at 1280x720 would cut it).
    double x = plot.left();
    double legendY = plot.top() + stripHeight * 1.6 + 6;
    auto legend = [&](const QColor& colour, const QString& text, double gapBefore) {
        const double width = fm.height() * 0.8 + fm.horizontalAdvance(text);
        if (x > plot.left() && x + gapBefore + width > plot.right()) {
            x = plot.left();
            legendY += fm.height() * 1.2;
        } else if (x > plot.left()) {
            x += gapBefore;
        }
        p.fillRect(QRectF(x, legendY + fm.height() * 0.2, fm.height() * 0.6, fm.height() * 0.6), colour);
        p.setPen(kInk);
        p.drawText(QPointF(x + fm.height() * 0.8, legendY + fm.ascent()), text);
        x += width;
    };
    for (size_t a = 0; a < chart.axes.size() && a < 4; ++a)
        legend(axisColours[a],
               QString("%1 %2").arg(chart.axes[a]).arg(std::count(chart.pairAxis.begin(), chart.pairAxis.end(), static_cast<int>(a))),
               fm.height() * 0.4);
    for (int u = 0; u < 3; ++u)
        legend(useColours[u], QString("%1 %2").arg(useNames[u]).arg(std::count(chart.pairUse.begin(), chart.pairUse.end(), u)),
               fm.height() * (u == 0 ? 1.4 : 0.4));
    if (const auto still = std::count(chart.pairAxis.begin(), chart.pairAxis.end(), -1); still > 0)
        legend(QColor(170, 170, 180), QString("unrotated %1").arg(still), fm.height() * 1.4);

    // Decay of the prior along each axis alone, its caption wrapped onto two lines where one is too narrow.
    static const QString decayCaption = "prior / prior at 0, moving along one axis alone (distance in positions)";
    QRectF decay(plot.left(), legendY + fm.height() * 1.8, plot.width(), 0);
    decay.setBottom(area.bottom() - fm.height() * 1.4 - chart::fittedLinesHeight(p.font(), plot.width(), decayCaption));
    double lo = 1.0;
    for (const auto& line : chart.decay)
        for (double v : line)
            lo = std::min(lo, v);
    lo = std::floor(lo * 10) / 10;
    decay.setLeft(decay.left() + axisLabelWidth(fm, lo, 1.0, 4) + 8);
    if (decay.height() > fm.height() * 2 && chart.distances.size() > 1) {
        drawValueAxis(p, decay, lo, 1.0, 4);
        setFont(p, area, 0.6);
        const double reach = chart.distances.back();
        auto px = [&](double d) { return decay.left() + decay.width() * d / reach; };
        auto py = [&](double v) { return decay.bottom() - decay.height() * (v - lo) / (1.0 - lo); };
        for (size_t a = 0; a < chart.decay.size() && a < 4; ++a) {
            QPainterPath line;
            for (size_t k = 0; k < chart.distances.size(); ++k) {
                const QPointF at(px(chart.distances[k]), py(chart.decay[a][k]));
                k == 0 ? line.moveTo(at) : line.lineTo(at);
            }
            p.setPen(QPen(axisColours[a], std::max(1.5, area.height() / 300.0)));
            p.drawPath(line);
        }
        p.setPen(kInk);
        p.drawText(QRectF(decay.left(), decay.bottom() + 2, decay.width(), fm.height()), Qt::AlignLeft, "0");
        p.drawText(QRectF(decay.left(), decay.bottom() + 2, decay.width(), fm.height()), Qt::AlignRight, number(reach));
        setFont(p, area, 0.6); // the caption is measured above at this size (the axis may have changed it)
        chart::fittedLines(p, plot.left(), decay.bottom() + 2 + fm.height(), plot.width(), decayCaption);
    }
    p.restore();
}

} // namespace ropescope::views

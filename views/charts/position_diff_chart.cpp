#include "views/charts/position_diff_chart.h"

#include "views/charts/chart_text.h"

#include <QFont>
#include <QPainter>

#include <algorithm>

namespace ropescope::views {
namespace {

QColor segmentShade(const QString& segment)
{
    if (segment.startsWith("image"))
        return QColor(214, 230, 250);
    if (segment.startsWith("video"))
        return QColor(214, 242, 220);
    return QColor(255, 255, 255);
}

// fontHeight: the height of a panel of three rows, whose labels' size the one-row chart keeps.
void paintPanel(QPainter& p, const QRectF& box, const PositionDiffChart& c, const std::vector<int64_t>& values, int axis, int64_t low,
                int64_t high, const QString& label, double fontHeight)
{
    const int64_t n = std::max<int64_t>(c.tokens, 1);
    const double span = std::max<double>(static_cast<double>(high - low), 1.0);
    auto x = [&](int64_t k) { return box.left() + (static_cast<double>(k) + 0.5) * box.width() / static_cast<double>(n); };
    auto y = [&](int64_t v) { return box.bottom() - (static_cast<double>(v - low) / span) * (box.height() - 6) - 3; };
    // Segments behind, one band per run of equal names.
    for (int64_t k = 0; k < c.tokens;) {
        int64_t end = k;
        while (end < c.tokens && c.segments[static_cast<qsizetype>(end)] == c.segments[static_cast<qsizetype>(k)])
            ++end;
        const double left = box.left() + static_cast<double>(k) * box.width() / static_cast<double>(n);
        const double right = box.left() + static_cast<double>(end) * box.width() / static_cast<double>(n);
        p.fillRect(QRectF(left, box.top(), right - left, box.height()), segmentShade(c.segments[static_cast<qsizetype>(k)]));
        k = end;
    }
    p.setPen(QPen(chart::kInk, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(box);
    const double dot = std::clamp(box.width() / static_cast<double>(n) * 0.8, 1.5, 5.0);
    for (int64_t k = 0; k < c.tokens; ++k) {
        const size_t at = static_cast<size_t>(axis * c.tokens + k);
        const bool differs = c.got[at] != c.expected[at];
        p.setPen(Qt::NoPen);
        p.setBrush(differs ? QColor(214, 39, 40) : QColor(60, 60, 60));
        const double r = differs ? dot * 0.8 : dot * 0.5;
        p.drawEllipse(QPointF(x(k), y(values[at])), r, r);
    }
    p.setPen(chart::kInk);
    chart::setFont(p, QRectF(box.topLeft(), QSizeF(box.width(), std::min(box.height(), fontHeight))), 0.8);
    p.drawText(QRectF(box.left() + 4, box.top() + 2, box.width() - 8, 18), Qt::AlignLeft | Qt::AlignTop, label);
    p.drawText(QRectF(box.left() - 60, box.top() - 2, 56, 16), Qt::AlignRight | Qt::AlignTop, QString::number(high));
    p.drawText(QRectF(box.left() - 60, box.bottom() - 14, 56, 16), Qt::AlignRight | Qt::AlignBottom, QString::number(low));
}

const char* const kThreeAxes[] = {"t", "h", "w"};
const char* const kOneAxis[] = {"position"};

} // namespace

void paintPositionDiffChart(QPainter& p, const QRectF& area, const PositionDiffChart& c)
{
    const QRectF plot = chart::titled(p, area, c.title);
    // Three rows (t, h, w), or one for a family that gives every token one position (Gemma).
    const int rows = c.tokens > 0 && c.got.size() == static_cast<size_t>(c.tokens) ? 1 : 3;
    const char* const* axes = rows == 1 ? kOneAxis : kThreeAxes;
    const double gap = 16, left = 64, legend = 28;
    const double width = (plot.width() - left - gap - 12) / 2, height = (plot.height() - legend - (rows - 1) * gap - 24) / rows;
    const double threeRows = (plot.height() - legend - 2 * gap - 24) / 3;
    p.setPen(chart::kInk);
    QFont header = p.font();
    header.setBold(true);
    header.setPixelSize(std::max(10, static_cast<int>(area.height() * 0.022)));
    p.setFont(header);
    p.drawText(QRectF(plot.left() + left, plot.top(), width, 22), Qt::AlignCenter, "the pipeline's positions");
    p.drawText(QRectF(plot.left() + left + width + gap, plot.top(), width, 22), Qt::AlignCenter, "the family's rule");
    for (int a = 0; a < rows; ++a) {
        const size_t from = static_cast<size_t>(a * c.tokens), to = from + static_cast<size_t>(c.tokens);
        int64_t low = 0, high = 1;
        if (c.tokens > 0) {
            low = std::min(
                *std::min_element(c.got.begin() + static_cast<std::ptrdiff_t>(from), c.got.begin() + static_cast<std::ptrdiff_t>(to)),
                *std::min_element(c.expected.begin() + static_cast<std::ptrdiff_t>(from),
                                  c.expected.begin() + static_cast<std::ptrdiff_t>(to)));
            high = std::max(
                *std::max_element(c.got.begin() + static_cast<std::ptrdiff_t>(from), c.got.begin() + static_cast<std::ptrdiff_t>(to)),
                *std::max_element(c.expected.begin() + static_cast<std::ptrdiff_t>(from),
                                  c.expected.begin() + static_cast<std::ptrdiff_t>(to)));
        }
        const double top = plot.top() + 24 + a * (height + gap);
        paintPanel(p, QRectF(plot.left() + left, top, width, height), c, c.got, a, low, high, QString("%1 (got)").arg(axes[a]), threeRows);
        paintPanel(p, QRectF(plot.left() + left + width + gap, top, width, height), c, c.expected, a, low, high,
                   QString("%1 (expected)").arg(axes[a]), threeRows);
    }
    // Legend: what the shades and the red dots mean.
    const double y0 = plot.bottom() - legend + 6;
    QFont small = p.font();
    small.setBold(false);
    small.setPixelSize(std::max(9, static_cast<int>(area.height() * 0.016)));
    p.setFont(small);
    double x0 = plot.left() + left;
    const auto swatch = [&](const QColor& colour, const QString& text, bool dot) {
        p.setPen(dot ? Qt::NoPen : QPen(chart::kInk, 0.5));
        p.setBrush(colour);
        if (dot)
            p.drawEllipse(QPointF(x0 + 6, y0 + 7), 4, 4);
        else
            p.drawRect(QRectF(x0, y0 + 1, 12, 12));
        p.setPen(chart::kInk);
        const double w = p.fontMetrics().horizontalAdvance(text) + 8;
        p.drawText(QRectF(x0 + 16, y0, w, 16), Qt::AlignLeft | Qt::AlignVCenter, text);
        x0 += 16 + w + 14;
    };
    swatch(segmentShade("text"), "text", false);
    swatch(segmentShade("image"), "image", false);
    swatch(segmentShade("video"), "video", false);
    swatch(QColor(214, 39, 40), "differs from the rule", true);
    p.setPen(chart::kInk);
    p.drawText(QRectF(plot.left() + left, plot.bottom() - 14, plot.width() - left, 14), Qt::AlignRight | Qt::AlignVCenter,
               QString("token index 0..%1 (attended tokens)").arg(std::max<int64_t>(c.tokens - 1, 0)));
}

} // namespace ropescope::views

#include "views/charts/chart_text.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace ropescope::views::chart {

const QColor kInk(40, 40, 46);

void setFont(QPainter& p, const QRectF& area, double scale, bool bold)
{
    QFont f = p.font();
    f.setPixelSize(std::max(9, static_cast<int>(std::min(area.height() / 18.0, area.width() / 30.0) * scale)));
    f.setBold(bold);
    p.setFont(f);
}

void fitFont(QPainter& p, const QString& text, double width)
{
    QFont f = p.font();
    while (f.pixelSize() > 8 && QFontMetricsF(f).horizontalAdvance(text) > width) {
        f.setPixelSize(f.pixelSize() - 1);
        p.setFont(f);
    }
}

double fittedLines(QPainter& p, double left, double top, double width, const QString& text)
{
    QFont f = p.font();
    const int floor = std::max(8, f.pixelSize() * 4 / 5);
    while (f.pixelSize() > floor && QFontMetricsF(f).horizontalAdvance(text) > width)
        f.setPixelSize(f.pixelSize() - 1);
    p.setFont(f);
    const QFontMetricsF m(f);
    if (m.horizontalAdvance(text) <= width) {
        p.drawText(QRectF(left, top, width, m.height()), Qt::AlignHCenter | Qt::AlignVCenter, text);
        return m.height();
    }
    // Two lines: break at the last space that lets the first line fit; the rest is cut at its end if need be.
    int cut = static_cast<int>(text.size());
    while (cut > 0 && m.horizontalAdvance(text.left(cut)) > width)
        cut = static_cast<int>(text.lastIndexOf(' ', cut - 1));
    if (cut <= 0) { // one long word: break where the width ends
        cut = 1;
        while (cut < text.size() && m.horizontalAdvance(text.left(cut + 1)) <= width)
            ++cut;
    }
    const QString first = text.left(cut).trimmed(), second = m.elidedText(text.mid(cut).trimmed(), Qt::ElideRight, width);
    p.drawText(QRectF(left, top, width, m.height()), Qt::AlignHCenter | Qt::AlignVCenter, first);
    p.drawText(QRectF(left, top + m.height(), width, m.height()), Qt::AlignHCenter | Qt::AlignVCenter, second);
    return 2 * m.height();
}

double fittedLinesHeight(const QFont& font, double width, const QString& text)
{
    QFont f = font;
    const int floor = std::max(8, f.pixelSize() * 4 / 5);
    while (f.pixelSize() > floor && QFontMetricsF(f).horizontalAdvance(text) > width)
        f.setPixelSize(f.pixelSize() - 1);
    const QFontMetricsF m(f);
    return m.horizontalAdvance(text) <= width ? m.height() : 2 * m.height();
}

void captionLine(QPainter& p, const QRectF& box, int alignment, const QString& text)
{
    p.save();
    QFont f = p.font();
    const int floor = std::max(8, f.pixelSize() * 4 / 5);
    while (f.pixelSize() > floor && QFontMetricsF(f).horizontalAdvance(text) > box.width())
        f.setPixelSize(f.pixelSize() - 1);
    p.setFont(f);
    p.drawText(box, alignment, QFontMetricsF(f).elidedText(text, Qt::ElideRight, box.width()));
    p.restore();
}

QRectF titled(QPainter& p, const QRectF& area, const QString& title)
{
    p.fillRect(area, Qt::white);
    setFont(p, area, 1.0, true);
    const double h = QFontMetricsF(p.font()).height();
    p.setPen(kInk);
    const double used = fittedLines(p, area.left() + 4, area.top() + 0.3 * h, area.width() - 8, title);
    return area.adjusted(0, 0.6 * h + used, 0, 0);
}

QString number(double v)
{
    if (v == 0 || (std::abs(v) >= 0.01 && std::abs(v) < 1e5))
        return QString::number(v, 'f', std::abs(v) >= 100 ? 1 : 3);
    return QString::number(v, 'g', 3); // 7.5e+05
}

} // namespace ropescope::views::chart

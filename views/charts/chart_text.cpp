#include "chart_text.h"

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

QRectF titled(QPainter& p, const QRectF& area, const QString& title)
{
    p.fillRect(area, Qt::white);
    setFont(p, area, 1.0, true);
    const double h = QFontMetricsF(p.font()).height();
    fitFont(p, title, area.width() - 8);
    p.setPen(kInk);
    // Still too wide at the smallest size (a small view): cut at the end, so it reads from its start, rather
    // than losing both ends to centring. Exports paint at their natural size and keep it whole.
    const QString shown = QFontMetricsF(p.font()).elidedText(title, Qt::ElideRight, area.width() - 8);
    p.drawText(QRectF(area.left(), area.top() + 0.3 * h, area.width(), h), Qt::AlignHCenter | Qt::AlignVCenter, shown);
    return area.adjusted(0, 1.6 * h, 0, 0);
}

QString number(double v)
{
    if (v == 0 || (std::abs(v) >= 0.01 && std::abs(v) < 1e5))
        return QString::number(v, 'f', std::abs(v) >= 100 ? 1 : 3);
    return QString::number(v, 'g', 3); // 7.5e+05
}

} // namespace ropescope::views::chart

#pragma once
// Text and colours every chart shares, so figures of one paper look alike.
#include <QColor>
#include <QRectF>
#include <QString>

class QPainter;

namespace ropescope::views::chart {

extern const QColor kInk;

// Fonts scale with the chart so a 4x export is not a tiny-text figure.
void setFont(QPainter& p, const QRectF& area, double scale = 1.0, bool bold = false);
// Shrinks the current font until `text` fits `width` (long layouts make long titles).
void fitFont(QPainter& p, const QString& text, double width);
// Fills `area` white, paints the title, returns the plot area left below it.
QRectF titled(QPainter& p, const QRectF& area, const QString& title);
// Three decimals for ordinary magnitudes, else three significant digits (7.5e+05).
QString number(double v);

} // namespace ropescope::views::chart

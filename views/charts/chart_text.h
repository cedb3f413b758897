#pragma once
// Text and colours every chart shares, so figures of one paper look alike.
#include <QColor>
#include <QRectF>
#include <QString>

class QFont;
class QPainter;

namespace ropescope::views::chart {

extern const QColor kInk;

// Fonts scale with the chart so a 4x export is not a tiny-text figure.
void setFont(QPainter& p, const QRectF& area, double scale = 1.0, bool bold = false);
// Shrinks the current font until `text` fits `width` (long layouts make long titles).
void fitFont(QPainter& p, const QString& text, double width);
// Paints `text` centred from `top` across `width`: the font shrinks by up to a fifth to fit one line; beyond
// that it wraps onto a second line (cut at the end only if two are not enough), so a long title or subtitle
// in a narrow dock stays readable instead of losing both ends. Returns the height used.
double fittedLines(QPainter& p, double left, double top, double width, const QString& text);
// The height fittedLines would use for `text` in `width` with `font`, so a chart can leave a caption its room
// before painting the plot above it.
double fittedLinesHeight(const QFont& font, double width, const QString& text);
// One line of caption in `box`: shrunk by up to a fifth to fit, then cut at its end (never at both ends, as a
// centred line wider than its box would be).
void captionLine(QPainter& p, const QRectF& box, int alignment, const QString& text);
// Fills `area` white, paints the title (up to two lines), returns the plot area left below it.
QRectF titled(QPainter& p, const QRectF& area, const QString& title);
// Three decimals for ordinary magnitudes, else three significant digits (7.5e+05).
QString number(double v);

} // namespace ropescope::views::chart

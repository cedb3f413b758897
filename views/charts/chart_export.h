#pragma once
#include <QByteArray>
#include <QJsonObject>
#include <QRectF>
#include <QSize>
#include <QString>

#include <functional>

class QPainter;

namespace ropescope::views {

using ChartPainter = std::function<void(QPainter&, const QRectF&)>;

enum class FigureFormat { Png, Svg, Pdf };

// By file extension (.png, .svg, .pdf); throws std::invalid_argument naming the path otherwise.
FigureFormat figureFormatFor(const QString& path);

// The chart as file bytes at `size` (pixels; points for PDF). PNG stores `metadata` in a tEXt chunk named
// "ropescope", SVG in its <desc>, PDF in its title; callers also write a sidecar for SVG/PDF.
QByteArray renderFigure(const ChartPainter& paint, QSize size, FigureFormat format, const QJsonObject& metadata);

// PNG bytes of an image with `metadata` in a tEXt chunk named "ropescope".
QByteArray encodePng(const class QImage& image, const QJsonObject& metadata);

} // namespace ropescope::views

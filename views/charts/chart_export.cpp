#include "views/charts/chart_export.h"

#include <QBuffer>
#include <QImage>
#include <QImageWriter>
#include <QJsonDocument>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <stdexcept>

namespace ropescope::views {

FigureFormat figureFormatFor(const QString& path)
{
    const QString lower = path.toLower();
    if (lower.endsWith(".png"))
        return FigureFormat::Png;
    if (lower.endsWith(".svg"))
        return FigureFormat::Svg;
    if (lower.endsWith(".pdf"))
        return FigureFormat::Pdf;
    throw std::invalid_argument(path.toStdString() + ": unknown figure format (use .png, .svg or .pdf)");
}

QByteArray encodePng(const QImage& image, const QJsonObject& metadata)
{
    QImage tagged = image;
    tagged.setText("ropescope", QString::fromUtf8(QJsonDocument(metadata).toJson(QJsonDocument::Compact)));
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QImageWriter writer(&buffer, "png");
    if (!writer.write(tagged))
        throw std::runtime_error("PNG encoding failed: " + writer.errorString().toStdString());
    return bytes;
}

namespace {

// A short title naming the figure (SVG and PDF viewers show it): "RopeScope ptd chart", "RopeScope image region".
QString figureTitle(const QJsonObject& metadata)
{
    if (metadata.contains("chart"))
        return "RopeScope " + metadata["chart"].toString() + " chart";
    if (metadata.contains("figure"))
        return "RopeScope " + metadata["figure"].toString();
    return "RopeScope figure";
}

} // namespace

QByteArray renderFigure(const ChartPainter& paint, QSize size, FigureFormat format, const QJsonObject& metadata)
{
    const QString description = QString::fromUtf8(QJsonDocument(metadata).toJson(QJsonDocument::Compact));
    const QRectF area(0, 0, size.width(), size.height());
    switch (format) {
    case FigureFormat::Png: {
        QImage image(size, QImage::Format_RGB32);
        image.fill(Qt::white);
        QPainter painter(&image);
        paint(painter, area);
        painter.end();
        return encodePng(image, metadata);
    }
    case FigureFormat::Svg: {
        QByteArray bytes;
        QBuffer buffer(&bytes);
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(size);
        svg.setViewBox(area);
        svg.setTitle(figureTitle(metadata));
        svg.setDescription(description);
        QPainter painter(&svg);
        paint(painter, area);
        painter.end();
        return bytes;
    }
    case FigureFormat::Pdf: {
        QByteArray bytes;
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        QPdfWriter pdf(&buffer);
        // A short title (PDF viewers show it); the parameters go in the .json sidecar.
        pdf.setTitle(figureTitle(metadata));
        pdf.setCreator("RopeScope");
        pdf.setResolution(72);
        pdf.setPageSize(QPageSize(QSizeF(size.width(), size.height()), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter painter(&pdf);
        paint(painter, area);
        painter.end();
        return bytes;
    }
    }
    return {};
}

} // namespace ropescope::views

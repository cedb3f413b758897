#include "views/charts/bias_figure.h"

#include "views/charts/chart_text.h"
#include "views/scene/colormap.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace ropescope::views {
namespace {

constexpr double kCell = 150, kCaption = 34, kLabel = 90, kProfile = 190, kGap = 12, kBar = 46;

void setPixelFont(QPainter& p, double pixels, bool bold = false)
{
    QFont font = p.font();
    font.setPixelSize(std::max(6, static_cast<int>(pixels)));
    font.setBold(bold);
    p.setFont(font);
}

QColor colourOf(double t)
{
    const Rgb c = viridis(t);
    return QColor(c[0], c[1], c[2]);
}

// A profile box's legend takes its top two lines; what it plots stays below them, so no line or bar runs
// through the legend's words (issue 56 item 14).
QRectF plottedPart(const QRectF& box, double scale)
{
    return box.adjusted(0, std::min(box.height() * 0.4, 30 * scale), 0, 0);
}

// Row (blue) and column (orange) profiles: mass per row / column, on a shared axis from 0 to `top`.
void paintProfiles(QPainter& p, const QRectF& frame, const std::vector<double>& rows, const std::vector<double>& cols, double top,
                   double scale)
{
    p.setPen(QPen(chart::kInk, 1));
    p.setBrush(Qt::white);
    p.drawRect(frame);
    const QRectF box = plottedPart(frame, scale);
    p.setPen(QPen(QColor(220, 220, 220), 1));
    p.drawLine(box.topLeft(), box.topRight()); // the axis' top: `top`
    auto line = [&](const std::vector<double>& v, const QColor& colour) {
        if (v.size() < 2 || top <= 0)
            return;
        QPainterPath path;
        for (size_t i = 0; i < v.size(); ++i) {
            const QPointF point(box.left() + box.width() * static_cast<double>(i) / static_cast<double>(v.size() - 1),
                                box.bottom() - box.height() * std::min(1.0, v[i] / top));
            i == 0 ? path.moveTo(point) : path.lineTo(point);
        }
        p.setPen(QPen(colour, 2));
        p.setBrush(Qt::NoBrush);
        p.drawPath(path);
    };
    line(rows, QColor(31, 119, 180));
    line(cols, QColor(255, 127, 14));
    setPixelFont(p, 11 * scale);
    p.setPen(QColor(31, 119, 180));
    p.drawText(frame.adjusted(4, 2, -4, -2), Qt::AlignTop | Qt::AlignLeft, "mass per row");
    p.setPen(QColor(255, 127, 14));
    p.drawText(frame.adjusted(4, 2 + 13 * scale, -4, -2), Qt::AlignTop | Qt::AlignLeft, "mass per column");
    p.setPen(chart::kInk);
    p.drawText(frame.adjusted(4, 2, -4, -2), Qt::AlignTop | Qt::AlignRight, chart::number(top));
}

// Mass per temporal patch (green) on its own axis from 0 to `top`, frames 0..n-1 left to right.
void paintFrameProfile(QPainter& p, const QRectF& frame, const std::vector<double>& frames, double top, double scale)
{
    p.setPen(QPen(chart::kInk, 1));
    p.setBrush(Qt::white);
    p.drawRect(frame);
    const QRectF box = plottedPart(frame, scale);
    const double width = box.width() / static_cast<double>(std::max<size_t>(1, frames.size()));
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(44, 160, 44));
    for (size_t i = 0; i < frames.size(); ++i) {
        const double h = top > 0 ? box.height() * std::min(1.0, frames[i] / top) : 0.0;
        p.drawRect(QRectF(box.left() + width * static_cast<double>(i) + width * 0.15, box.bottom() - h, width * 0.7, h));
    }
    setPixelFont(p, 11 * scale);
    p.setPen(QColor(44, 160, 44));
    p.drawText(frame.adjusted(4, 2, -4, -2), Qt::AlignTop | Qt::AlignLeft, QString("mass per frame (%1)").arg(frames.size()));
    p.setPen(chart::kInk);
    p.drawText(frame.adjusted(4, 2 + 13 * scale, -4, -2), Qt::AlignTop | Qt::AlignLeft, chart::number(top));
}

} // namespace

QSize biasFigureSize(const BiasFigure& f)
{
    const double width =
        kLabel + static_cast<double>(f.layers.size()) * (kCell + kGap) + (f.frameProfiles.empty() ? 1 : 2) * (kProfile + kGap);
    const double height = 60 + static_cast<double>(f.schemes.size()) * (kCell + kCaption + kGap) + kBar + 20;
    return {static_cast<int>(width), static_cast<int>(height)};
}

void paintBiasFigure(QPainter& p, const QRectF& area, const BiasFigure& f)
{
    const QRectF plot = chart::titled(p, area, f.title);
    if (f.schemes.isEmpty() || f.layers.empty() || f.rows < 1 || f.cols < 1)
        return;
    const QSize natural = biasFigureSize(f);
    const double scale = std::min(plot.width() / natural.width(), (plot.height() + 60) / natural.height());
    const double cell = kCell * scale, caption = kCaption * scale, label = kLabel * scale, gap = kGap * scale;
    // One colour scale for every map: colours compare across schemes and layers.
    double top = 0, profileTop = 0;
    for (const auto& m : f.maps)
        for (double v : m)
            top = std::max(top, v);
    for (size_t s = 0; s < f.rowProfiles.size(); ++s) {
        for (double v : f.rowProfiles[s])
            profileTop = std::max(profileTop, v);
        for (double v : f.colProfiles[s])
            profileTop = std::max(profileTop, v);
    }
    double frameTop = 0;
    for (const auto& frames : f.frameProfiles)
        for (double v : frames)
            frameTop = std::max(frameTop, v);
    setPixelFont(p, 13 * scale);
    p.setPen(chart::kInk);
    for (size_t l = 0; l < f.layers.size(); ++l)
        p.drawText(QRectF(plot.left() + label + static_cast<double>(l) * (cell + gap), plot.top(), cell, 18 * scale), Qt::AlignCenter,
                   QString("layer %1").arg(f.layers[l]));
    const double rowsTop = plot.top() + 20 * scale;
    for (qsizetype s = 0; s < f.schemes.size(); ++s) {
        const double y = rowsTop + static_cast<double>(s) * (cell + caption + gap);
        setPixelFont(p, 13 * scale, true);
        p.setPen(chart::kInk);
        p.drawText(QRectF(plot.left(), y, label - 6, cell), Qt::AlignVCenter | Qt::AlignRight | Qt::TextWordWrap, f.schemes[s]);
        for (size_t l = 0; l < f.layers.size(); ++l) {
            const size_t k = static_cast<size_t>(s) * f.layers.size() + l;
            const double x = plot.left() + label + static_cast<double>(l) * (cell + gap);
            const double w = cell / f.cols, h = cell / f.rows;
            p.setPen(Qt::NoPen);
            for (int r = 0; r < f.rows; ++r)
                for (int c = 0; c < f.cols; ++c) {
                    const double v = k < f.maps.size() ? f.maps[k][static_cast<size_t>(r * f.cols + c)] : 0.0;
                    p.setBrush(colourOf(top > 0 ? v / top : 0.0));
                    p.drawRect(QRectF(x + c * w, y + r * h, w + 0.5, h + 0.5));
                }
            if (k < f.captions.size()) {
                setPixelFont(p, 10.5 * scale);
                p.setPen(chart::kInk);
                p.drawText(QRectF(x, y + cell + 1, cell, caption), Qt::AlignTop | Qt::AlignHCenter, f.captions[k].join('\n'));
            }
        }
        const double px = plot.left() + label + static_cast<double>(f.layers.size()) * (cell + gap);
        if (static_cast<size_t>(s) < f.rowProfiles.size())
            paintProfiles(p, QRectF(px, y, kProfile * scale, cell), f.rowProfiles[static_cast<size_t>(s)],
                          f.colProfiles[static_cast<size_t>(s)], profileTop, scale);
        if (static_cast<size_t>(s) < f.frameProfiles.size())
            paintFrameProfile(p, QRectF(px + (kProfile + kGap) * scale, y, kProfile * scale, cell), f.frameProfiles[static_cast<size_t>(s)],
                              frameTop, scale);
    }
    // The colour bar: 0 .. the largest cell's share of the attention over the image.
    const double barY = rowsTop + static_cast<double>(f.schemes.size()) * (cell + caption + gap) + 4 * scale;
    const QRectF bar(plot.left() + label, barY, std::max(cell, static_cast<double>(f.layers.size()) * (cell + gap) - gap), 12 * scale);
    for (int i = 0; i < 256; ++i) {
        p.setPen(Qt::NoPen);
        p.setBrush(colourOf(i / 255.0));
        p.drawRect(QRectF(bar.left() + bar.width() * i / 256.0, bar.top(), bar.width() / 256.0 + 0.5, bar.height()));
    }
    setPixelFont(p, 11 * scale);
    p.setPen(chart::kInk);
    const QRectF under(bar.left(), bar.bottom() + 2, bar.width(), 16 * scale);
    p.setBrush(Qt::NoBrush);
    p.drawText(under, Qt::AlignLeft | Qt::AlignTop, "0");
    p.drawText(under, Qt::AlignHCenter | Qt::AlignTop, "share of the image's attention per cell");
    p.drawText(under, Qt::AlignRight | Qt::AlignTop, chart::number(top));
}

} // namespace ropescope::views

#include "views/charts/attention_figures.h"

#include "views/charts/chart_text.h"
#include "views/scene/colormap.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace ropescope::views {
namespace {

const QColor kSelected(214, 40, 40);

// Text sizes follow the cells, not the page, so a sheet of many small maps stays readable.
int fontPixels(double cellWidth)
{
    return std::clamp(static_cast<int>(cellWidth / 13.0), 9, 18);
}

double titleHeight(int px)
{
    return 2.2 * px;
}

struct SheetGeometry {
    int columns = 1, rows = 1, px = 10;
    double top = 0, cellWidth = 0, cellHeight = 0, captionHeight = 0;
    QRectF cell(const QRectF& area, int i) const
    {
        return {area.left() + (i % columns) * cellWidth, area.top() + top + (i / columns) * cellHeight, cellWidth, cellHeight};
    }
};

int captionLines(const MapSheet& sheet)
{
    qsizetype lines = 0;
    for (const MapSheet::Map& m : sheet.maps)
        lines = std::max(lines, m.caption.size());
    return static_cast<int>(lines);
}

int sheetColumns(const MapSheet& sheet)
{
    const int n = std::max<int>(1, static_cast<int>(sheet.maps.size()));
    return sheet.columns > 0 ? std::min(sheet.columns, n) : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
}

SheetGeometry sheetGeometry(const QRectF& area, const MapSheet& sheet)
{
    SheetGeometry g;
    const int n = std::max<int>(1, static_cast<int>(sheet.maps.size()));
    g.columns = sheetColumns(sheet);
    g.rows = (n + g.columns - 1) / g.columns;
    g.cellWidth = area.width() / g.columns;
    g.px = fontPixels(g.cellWidth);
    g.top = titleHeight(g.px);
    g.cellHeight = (area.height() - g.top) / g.rows;
    g.captionHeight = captionLines(sheet) * 1.3 * g.px + 0.4 * g.px;
    return g;
}

// Several images' grids side by side, one cell apart: the size in cells of what colouredGrid draws.
QSize gridStripSize(const std::vector<QSize>& grids)
{
    QSize size(0, 0);
    for (const QSize& g : grids)
        size = QSize(size.width() + g.width() + (size.width() > 0 ? 1 : 0), std::max(size.height(), g.height()));
    return size;
}

const QColor kHidden(150, 150, 150); // a cell the layer's mask hid from every question token

// A map over every grid's cells (image after image, row-major each) in viridis on one scale, one pixel a cell; cells
// `hidden` marks 2 (hidden by the mask from every row) grey and outside the scale.
QImage colouredGrid(const std::vector<float>& values, const std::vector<QSize>& grids, const std::vector<uint8_t>& hidden = {})
{
    const QSize size = gridStripSize(grids);
    QImage image(std::max(1, size.width()), std::max(1, size.height()), QImage::Format_RGB32);
    image.fill(Qt::white);
    size_t cells = 0;
    for (const QSize& g : grids)
        cells += static_cast<size_t>(g.width()) * static_cast<size_t>(g.height());
    if (values.size() != cells || values.empty()) {
        image.fill(Qt::lightGray);
        return image;
    }
    const bool marked = hidden.size() == values.size();
    const auto isHidden = [&](size_t i) { return marked && hidden[i] == 2; };
    double lo = 0, hi = 0;
    bool any = false;
    for (size_t i = 0; i < values.size(); ++i)
        if (!isHidden(i)) {
            lo = any ? std::min<double>(lo, values[i]) : values[i];
            hi = any ? std::max<double>(hi, values[i]) : values[i];
            any = true;
        }
    const double range = hi - lo;
    size_t next = 0;
    int left = 0;
    for (const QSize& g : grids) {
        for (int r = 0; r < g.height(); ++r)
            for (int c = 0; c < g.width(); ++c, ++next) {
                if (isHidden(next)) {
                    image.setPixel(left + c, r, kHidden.rgb());
                    continue;
                }
                const Rgb rgb = viridis(range > 0 ? (values[next] - lo) / range : 0.5);
                image.setPixel(left + c, r, qRgb(rgb[0], rgb[1], rgb[2]));
            }
        left += g.width() + 1;
    }
    return image;
}

double gridAspect(const std::vector<QSize>& grids)
{
    const QSize size = gridStripSize(grids);
    return size.width() > 0 ? static_cast<double>(size.height()) / size.width() : 1.0;
}

// The largest rectangle of `aspect` (height / width) centred in `box`.
QRectF fitted(const QRectF& box, double aspect)
{
    double w = box.width(), h = w * aspect;
    if (h > box.height()) {
        h = box.height();
        w = h / aspect;
    }
    return {box.center().x() - w / 2, box.center().y() - h / 2, w, h};
}

struct GridGeometry {
    int px = 10;
    QRectF cells; // the cell area, right of the layer labels and under the head labels
    double cellWidth = 0, cellHeight = 0;
    QRectF cell(int row, int head) const
    {
        return {cells.left() + head * cellWidth, cells.top() + row * cellHeight, cellWidth, cellHeight};
    }
};

// Whether any cell of the grid is hidden by its layer's mask from every question token (drawn grey).
bool anyHidden(const LayerHeadGrid& grid)
{
    return std::any_of(grid.hidden.begin(), grid.hidden.end(),
                       [](const std::vector<uint8_t>& h) { return std::find(h.begin(), h.end(), uint8_t(2)) != h.end(); });
}

// The colour scale's band under the cells: the bar, then its labels (and a line for the grey cells, when any).
double scaleHeight(int px, const LayerHeadGrid& grid)
{
    return (anyHidden(grid) ? 5.0 : 3.4) * px;
}

// A row's label: "L5", then its layer's mask where the grid has them ("L5 sliding (window 8)").
QString rowLabel(const LayerHeadGrid& grid, size_t r)
{
    const QString label = "L" + QString::number(grid.layers[r]);
    return r < grid.layerKinds.size() && !grid.layerKinds[r].isEmpty() ? label + " " + grid.layerKinds[r] : label;
}

// The labels' column: wide enough for the longest row label at `px` (at most a third of the figure).
double labelWidth(const LayerHeadGrid& grid, int px, double width)
{
    if (grid.layerKinds.empty())
        return 3.4 * px;
    QFont font;
    font.setPixelSize(px);
    const QFontMetricsF fm(font);
    double widest = 0;
    for (size_t r = 0; r < grid.layers.size(); ++r)
        widest = std::max(widest, fm.horizontalAdvance(rowLabel(grid, r)));
    return std::clamp(widest + 0.8 * px, 3.4 * px, std::max(3.4 * px, width / 3));
}

GridGeometry gridGeometry(const QRectF& area, const LayerHeadGrid& grid)
{
    GridGeometry g;
    const int heads = std::max(1, grid.heads), rows = std::max<int>(1, static_cast<int>(grid.layers.size()));
    g.px = std::clamp(static_cast<int>(std::min(area.width(), area.height()) / 40.0), 9, 16);
    const double left = labelWidth(grid, g.px, area.width()), top = titleHeight(g.px) + 1.5 * g.px;
    g.cells = area.adjusted(left, top, -4, -4 - scaleHeight(g.px, grid));
    g.cellWidth = g.cells.width() / heads;
    g.cellHeight = g.cells.height() / rows;
    if (grid.show == LayerHeadGrid::Show::Maps) {
        // Cells of the maps' own shape (plus the 2 px between them), packed from the top left: a tall area no
        // longer spreads the rows apart with empty bands between them, nor a wide one the heads.
        const double aspect = gridAspect(grid.grids);
        const double height = (g.cellWidth - 2) * aspect + 2;
        if (height < g.cellHeight)
            g.cellHeight = height;
        else
            g.cellWidth = (g.cellHeight - 2) / aspect + 2;
        g.cells.setSize(QSizeF(g.cellWidth * heads, g.cellHeight * rows));
    }
    return g;
}

// Under the cells: what the colours mean. Maps are each coloured on their own scale (least to most attention of
// that layer and head over the image); masses share one, from 0 to the largest.
void paintScale(QPainter& p, const GridGeometry& g, const LayerHeadGrid& grid, double maxMass)
{
    const QRectF bar(g.cells.left(), g.cells.bottom() + 0.8 * g.px, std::max(120.0, g.cells.width()), 0.9 * g.px);
    QImage ramp(256, 1, QImage::Format_RGB32);
    for (int i = 0; i < 256; ++i) {
        const Rgb rgb = viridis(i / 255.0);
        ramp.setPixel(i, 0, qRgb(rgb[0], rgb[1], rgb[2]));
    }
    p.setRenderHint(QPainter::SmoothPixmapTransform, true);
    p.drawImage(bar, ramp);
    p.setPen(chart::kInk);
    const bool maps = grid.show == LayerHeadGrid::Show::Maps;
    const QString least = maps ? "least" : "0", most = maps ? "most" : QString::number(maxMass, 'f', 2);
    const QRectF labels(bar.left(), bar.bottom() + 0.2 * g.px, bar.width(), 1.4 * g.px);
    p.drawText(labels, Qt::AlignLeft | Qt::AlignVCenter, least);
    p.drawText(labels, Qt::AlignRight | Qt::AlignVCenter, most);
    // What the colours mean, between the two ends, shortened only when the figure is very narrow.
    const QFontMetricsF fm(p.font());
    const double ends = std::max(fm.horizontalAdvance(least), fm.horizontalAdvance(most)) + g.px;
    const QString meaning = maps ? "attention over the image, each cell on its own scale" : "share of the attention on the image";
    p.drawText(labels.adjusted(ends, 0, -ends, 0), Qt::AlignCenter, fm.elidedText(meaning, Qt::ElideRight, labels.width() - 2 * ends));
    if (maps && anyHidden(grid)) { // Gemma: a swatch and what it means, on a line of its own
        const QRectF line(bar.left(), labels.bottom() + 0.1 * g.px, bar.width(), 1.4 * g.px);
        p.fillRect(QRectF(line.left(), line.center().y() - 0.4 * g.px, 0.8 * g.px, 0.8 * g.px), kHidden);
        p.drawText(line.adjusted(1.2 * g.px, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText("grey: hidden from every question token by the layer's mask", Qt::ElideRight, line.width() - 1.2 * g.px));
    }
}

void setPixels(QPainter& p, int px, bool bold = false)
{
    QFont f = p.font();
    f.setPixelSize(px);
    f.setBold(bold);
    p.setFont(f);
}

void paintTitle(QPainter& p, const QRectF& area, const QString& title, int px)
{
    p.fillRect(area, Qt::white);
    setPixels(p, px + 2, true);
    chart::fitFont(p, title, area.width() - 8);
    p.setPen(chart::kInk);
    // Still too wide at the smallest size: cut at the end with an ellipsis, never at both ends (centred text
    // wider than the figure lost its first and last words). The whole title is in the figure's metadata.
    const QString shown = QFontMetricsF(p.font()).elidedText(title, Qt::ElideRight, area.width() - 8);
    p.drawText(QRectF(area.left(), area.top(), area.width(), titleHeight(px)), Qt::AlignCenter, shown);
}

} // namespace

void paintMapSheet(QPainter& p, const QRectF& area, const MapSheet& sheet)
{
    const SheetGeometry g = sheetGeometry(area, sheet);
    paintTitle(p, area, sheet.title, g.px);
    p.setRenderHint(QPainter::SmoothPixmapTransform, true);
    for (size_t i = 0; i < sheet.maps.size(); ++i) {
        const MapSheet::Map& m = sheet.maps[i];
        const QRectF cell = g.cell(area, static_cast<int>(i)).adjusted(3, 3, -3, -3);
        const QRectF box = cell.adjusted(0, 0, 0, -g.captionHeight);
        QRectF target(box.left(), box.top(), box.width(), 0);
        if (!m.image.isNull() && box.height() > 2) {
            // At the top of its cell, the caption right under it.
            target = fitted(box, static_cast<double>(m.image.height()) / m.image.width());
            target.moveTop(box.top());
            p.drawImage(target, m.image);
            if (static_cast<int>(i) == sheet.selected) {
                p.setPen(QPen(kSelected, 3));
                p.setBrush(Qt::NoBrush);
                p.drawRect(target.adjusted(-1.5, -1.5, 1.5, 1.5));
            }
        }
        setPixels(p, g.px, static_cast<int>(i) == sheet.selected);
        p.setPen(chart::kInk);
        const QFontMetricsF fm(p.font());
        for (qsizetype line = 0; line < m.caption.size(); ++line) {
            const QRectF row(cell.left(), target.bottom() + 0.3 * g.px + static_cast<double>(line) * 1.3 * g.px, cell.width(), 1.3 * g.px);
            p.drawText(row, Qt::AlignHCenter | Qt::AlignVCenter, fm.elidedText(m.caption[line], Qt::ElideRight, cell.width()));
        }
    }
}

QSize mapSheetSize(const MapSheet& sheet, int cellWidth)
{
    const int n = std::max<int>(1, static_cast<int>(sheet.maps.size()));
    const int columns = sheetColumns(sheet), rows = (n + columns - 1) / columns;
    double aspect = 1;
    for (const MapSheet::Map& m : sheet.maps)
        if (!m.image.isNull()) {
            aspect = static_cast<double>(m.image.height()) / m.image.width();
            break;
        }
    const int px = fontPixels(cellWidth);
    const double cellHeight = cellWidth * aspect + captionLines(sheet) * 1.3 * px + 0.4 * px + 6;
    return {columns * cellWidth, static_cast<int>(std::ceil(titleHeight(px) + rows * cellHeight))};
}

void paintLayerHeadGrid(QPainter& p, const QRectF& area, const LayerHeadGrid& grid)
{
    const GridGeometry g = gridGeometry(area, grid);
    paintTitle(p, area, grid.title, g.px);
    setPixels(p, g.px);
    p.setPen(chart::kInk);
    const QFontMetricsF fm(p.font());
    // Labels every k-th row or column when cells are smaller than the text.
    const int headStep = std::max(1, static_cast<int>(std::ceil(fm.horizontalAdvance("H00") / std::max(1.0, g.cellWidth))));
    const int layerStep = std::max(1, static_cast<int>(std::ceil(fm.height() / std::max(1.0, g.cellHeight))));
    for (int h = 0; h < grid.heads; h += headStep)
        p.drawText(QRectF(g.cell(0, h).left(), g.cells.top() - 1.5 * g.px, g.cellWidth * headStep, 1.4 * g.px),
                   Qt::AlignLeft | Qt::AlignVCenter, "H" + QString::number(h));
    for (size_t r = 0; r < grid.layers.size(); r += static_cast<size_t>(layerStep))
        p.drawText(QRectF(area.left(), g.cell(static_cast<int>(r), 0).top(), g.cells.left() - area.left() - 4, g.cellHeight),
                   Qt::AlignRight | Qt::AlignVCenter, fm.elidedText(rowLabel(grid, r), Qt::ElideRight, g.cells.left() - area.left() - 4));

    const double maxMass = grid.imageMass.empty() ? 1.0 : std::max(1e-12, *std::max_element(grid.imageMass.begin(), grid.imageMass.end()));
    const double aspect = gridAspect(grid.grids);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false); // cells show patches, not a blur
    for (size_t r = 0; r < grid.layers.size(); ++r)
        for (int h = 0; h < grid.heads; ++h) {
            const size_t k = r * static_cast<size_t>(grid.heads) + static_cast<size_t>(h);
            const QRectF cell = g.cell(static_cast<int>(r), h).adjusted(1, 1, -1, -1);
            QRectF drawn = cell;
            if (grid.show == LayerHeadGrid::Show::Maps && k < grid.maps.size()) {
                drawn = fitted(cell, aspect);
                p.drawImage(drawn,
                            colouredGrid(grid.maps[k], grid.grids, r < grid.hidden.size() ? grid.hidden[r] : std::vector<uint8_t>()));
            } else if (k < grid.imageMass.size()) {
                const Rgb rgb = viridis(grid.imageMass[k] / maxMass);
                p.fillRect(cell, QColor(rgb[0], rgb[1], rgb[2]));
                const QString value = QString::number(grid.imageMass[k], 'f', 2);
                if (fm.horizontalAdvance(value) < cell.width() - 2 && fm.height() < cell.height()) {
                    p.setPen(grid.imageMass[k] / maxMass > 0.6 ? chart::kInk : Qt::white);
                    p.drawText(cell, Qt::AlignCenter, value);
                }
            }
            if (static_cast<int>(r) == grid.selectedRow && h == grid.selectedHead) {
                p.setPen(QPen(kSelected, 2.5));
                p.setBrush(Qt::NoBrush);
                p.drawRect(drawn.adjusted(-1, -1, 1, 1));
            }
        }
    setPixels(p, g.px);
    paintScale(p, g, grid, maxMass);
}

QSize layerHeadFigureSize(const LayerHeadGrid& grid)
{
    const int images = static_cast<int>(grid.grids.size());
    return layerHeadGridSize(grid, std::clamp(1600 / std::max(1, grid.heads), 24, 96) * std::clamp(images, 1, 3));
}

QSize layerHeadGridSize(const LayerHeadGrid& grid, int cellWidth)
{
    const double aspect = gridAspect(grid.grids);
    const int width = std::max(1, grid.heads) * cellWidth;
    const int height = static_cast<int>(static_cast<double>(std::max<size_t>(1, grid.layers.size())) * std::max(8.0, cellWidth * aspect));
    // Margins as gridGeometry makes them for a figure of about this size.
    const int px = std::clamp(std::min(width, height) / 40, 9, 16);
    const double labels = labelWidth(grid, px, 1.5 * width);
    return {width + static_cast<int>(labels) + 4, height + static_cast<int>(titleHeight(px) + 1.5 * px + scaleHeight(px, grid)) + 4};
}

std::pair<int, int> layerHeadAt(const QRectF& area, const LayerHeadGrid& grid, QPointF point)
{
    const GridGeometry g = gridGeometry(area, grid);
    if (!g.cells.contains(point) || grid.heads < 1 || grid.layers.empty())
        return {-1, -1};
    const int head = static_cast<int>((point.x() - g.cells.left()) / g.cellWidth);
    const int row = static_cast<int>((point.y() - g.cells.top()) / g.cellHeight);
    if (head < 0 || head >= grid.heads || row < 0 || row >= static_cast<int>(grid.layers.size()))
        return {-1, -1};
    return {row, head};
}

} // namespace ropescope::views

#pragma once
// Figures of many attention maps at once: a sheet of captioned maps (one per token, or one per scheme) and
// the layers x heads small multiples. Painted the same way on screen and into PNG/SVG/PDF.
#include <QImage>
#include <QPointF>
#include <QRectF>
#include <QSize>
#include <QStringList>

#include <cstdint>
#include <utility>
#include <vector>

class QPainter;

namespace ropescope::views {

struct MapSheet {
    QString title;
    struct Map {
        QImage image;        // e.g. attentionOverlay's heatmap
        QStringList caption; // lines under the map
    };
    std::vector<Map> maps;
    int columns = 0;   // 0: about square
    int selected = -1; // framed
};
void paintMapSheet(QPainter& painter, const QRectF& area, const MapSheet& sheet);
// A size that shows each map `cellWidth` wide with its caption.
QSize mapSheetSize(const MapSheet& sheet, int cellWidth);

// Every captured layer (rows) x every head (columns): the head's map over the image grid, each cell
// min-max normalised on its own (where it looks), or one colour per cell for the head's attention mass on
// the image (how much it looks), on one scale over the whole grid.
struct LayerHeadGrid {
    QString title;
    enum class Show { Maps, Mass } show = Show::Maps;
    std::vector<int> layers; // row labels
    int heads = 0;
    std::vector<QSize> grids;             // each image's merged grid (width: columns, height: rows), in prompt order
    std::vector<std::vector<float>> maps; // layers.size() * heads, layer-major; every grid's cells, image after image
    std::vector<double> imageMass;        // the same indexing
    int selectedRow = -1, selectedHead = -1;
    // Per row (optional): its layer's mask in words ("sliding (window 512)", "full"), written after its label, and per
    // image token whether the mask hid it from every question token (2), some (1) or none (0): the cells hidden from
    // every one are drawn grey and left out of the map's scale (their zeros are the mask's, not the model's).
    std::vector<QString> layerKinds;
    std::vector<std::vector<uint8_t>> hidden;
};
void paintLayerHeadGrid(QPainter& painter, const QRectF& area, const LayerHeadGrid& grid);
QSize layerHeadGridSize(const LayerHeadGrid& grid, int cellWidth);
// The size a layers x heads figure is exported at (the CLI's layers_heads and the GUI's Export): about 1600 px
// across the heads, 24 to 96 px a cell, wider for a cell holding several images side by side.
QSize layerHeadFigureSize(const LayerHeadGrid& grid);
// {row in layers, head} under `point` in a grid painted into `area`, or {-1, -1}.
std::pair<int, int> layerHeadAt(const QRectF& area, const LayerHeadGrid& grid, QPointF point);

} // namespace ropescope::views

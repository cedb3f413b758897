#pragma once
// Image region -> text: the picture with the selected cells outlined, every captured layer's share of
// each token's image attention on the region (a strip, layers x tokens), and the shown layer as bars
// with the region's area as the "ignores position" line. Painted the same on screen and into PNG/SVG/PDF.
#include "views/charts/attention_heatmap.h"

#include <QImage>
#include <QRectF>
#include <QSize>
#include <QStringList>

#include <vector>

class QPainter;

namespace ropescope::views {

struct RegionChart {
    QString title;
    QImage image;                           // the model's view with the region outlined (outlineCells; a strip for several images)
    QStringList tokens;                     // one label per token
    std::vector<bool> answer;               // answer tokens are drawn in another colour
    std::vector<int> layers;                // strip rows
    std::vector<std::vector<double>> share; // [layer][token], 0..1
    int shownLayer = 0;                     // index into layers of the bars
    double area = 0;                        // the region's share of the image
};
// With no tokens (nothing selected yet) only the picture and `hint` are painted.
void paintRegionChart(QPainter& painter, const QRectF& area, const RegionChart& chart, const QString& hint = {});
QSize regionChartSize(const RegionChart& chart);
// Where the picture (of `imageSize`, its aspect kept) and the layer strip with its bars go in a chart
// painted into `area`: side by side in a wide area, the picture above the charts in a tall or narrow one
// (a side panel, several images), so neither shrinks to a sliver.
struct RegionLayout {
    QRectF picture, charts;
};
RegionLayout regionLayout(const QRectF& area, QSize imageSize);
// Where the picture lies (regionLayout's), and the picture and cell (row-major on its grid) under `point`
// there, or {-1, -1}: drags on the pictures select regions.
QRectF regionPictureRect(const QRectF& area, QSize imageSize);
struct PictureCell {
    int picture = -1, cell = -1;
};
PictureCell regionCellAt(const QRectF& area, const MapPictures& pictures, QPointF point);

// `image` with the cells (row-major on a rows x cols grid) outlined, their outside dimmed.
QImage outlineCells(const QImage& image, int rows, int cols, const std::vector<int>& cells);
// The pictures as a strip (pictureStrip), `cells` outlined on picture `picture`, the other pictures dimmed.
QImage outlineCells(const MapPictures& pictures, int picture, const std::vector<int>& cells);

} // namespace ropescope::views

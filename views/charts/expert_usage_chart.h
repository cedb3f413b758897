#pragma once
// Where a mixture-of-experts decoder sends image and text tokens: three layers x experts grids, one above the
// other on one scale each: the share of image tokens routed to each expert, the share of text tokens, and image
// minus text on a diverging scale (red: the expert serves images more, blue: text more). `attend
// --expert-usage` and the Attention tab's Experts view paint it.
#include <QPointF>
#include <QRectF>
#include <QSize>
#include <QString>

#include <utility>
#include <vector>

class QPainter;

namespace ropescope::views {

struct ExpertUsageGrid {
    QString title;
    std::vector<int> layers; // row labels (the sparse layers)
    int experts = 0;
    std::vector<std::vector<double>> image, text; // [layer][expert] shares
    int selectedRow = -1, selectedExpert = -1;
};

void paintExpertUsage(QPainter& painter, const QRectF& area, const ExpertUsageGrid& grid);
// The export size: 3 to 12 px per expert, 8 to 24 px per layer row.
QSize expertUsageFigureSize(const ExpertUsageGrid& grid);
// {row, expert} under `point` in a grid painted into `area` (any of the three panels), or {-1, -1}.
std::pair<int, int> expertUsageAt(const QRectF& area, const ExpertUsageGrid& grid, QPointF point);

} // namespace ropescope::views

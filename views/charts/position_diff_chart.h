#pragma once
// check-positions' figure for one sample: the positions a pipeline gave (left) and the family's rule
// (right), one row per axis (t, h, w; Gemma's one position), position against token index, with the segments
// shaded behind and the tokens whose positions differ marked in red on both sides.
#include <QRectF>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

class QPainter;

namespace ropescope::views {

struct PositionDiffChart {
    QString title;
    int64_t tokens = 0;
    std::vector<int64_t> got, expected; // 3 x tokens, row-major (t, h, w), or 1 x tokens
    QStringList segments;               // per token: "text", "image 0", "video 1 frame 2"
};
void paintPositionDiffChart(QPainter& painter, const QRectF& area, const PositionDiffChart& chart);

} // namespace ropescope::views

#pragma once
// What each kind of decoder layer lets every query see of every key over a whole prompt (issue 73 §3): the view that
// shows a mask's cut, and where an image's tokens see each other both ways. `attend --masks` writes it.
#include <QImage>
#include <QRectF>
#include <QSize>
#include <QString>

#include <cstdint>
#include <vector>

class QPainter;

namespace ropescope::views {

struct MaskChart {
    QString title;
    // One square panel per kind of layer: `codes` [length x length] row-major (query rows, key columns), the codes of
    // core/model/analysis/layer_masks.h (0 seen, 1 seen through an image block, 2 hidden by the window, 3 hidden by
    // causality), under its label ("layers 0-1, 3-4: sliding (window 8), image blocks both ways").
    struct Panel {
        QString label;
        int length = 0;
        std::vector<uint8_t> codes;
    };
    std::vector<Panel> panels;
    std::vector<uint8_t> imageTokens; // per position: 1 for an image or video soft token (bands along both axes)
    std::vector<uint8_t> queryRows;   // per position: 1 for a row the attention views capture (a band on the left)
};

// The four codes' colours, for the chart and its legend.
QColor maskCodeColour(int code);
// A panel's cells as an image, one pixel a cell.
QImage maskImage(const MaskChart::Panel& panel);
void paintMaskChart(QPainter& painter, const QRectF& area, const MaskChart& chart);
// About 560 px a panel, side by side, with the title, labels and legend.
QSize maskChartSize(const MaskChart& chart);

} // namespace ropescope::views

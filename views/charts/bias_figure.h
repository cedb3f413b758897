#pragma once
// The positional-bias figure: the mean text -> image attention map of every scheme (rows) at every selected
// layer (columns) on one colour scale, each scheme's row and column profiles at the last layer (for videos also
// its mass per frame), and the colour bar. Painted the same way on screen and into PNG/SVG/PDF.
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>

#include <vector>

class QPainter;

namespace ropescope::views {

struct BiasFigure {
    QString title;
    QStringList schemes;                                       // row labels
    std::vector<int> layers;                                   // column labels
    int rows = 0, cols = 0;                                    // the common grid
    std::vector<std::vector<double>> maps;                     // schemes x layers, scheme-major; rows * cols each, sums to 1
    std::vector<QStringList> captions;                         // the same indexing: lines under each map
    std::vector<std::vector<double>> rowProfiles, colProfiles; // per scheme, at the last layer
    std::vector<std::vector<double>> frameProfiles;            // videos: mass per temporal patch, per scheme at the last layer
};
void paintBiasFigure(QPainter& painter, const QRectF& area, const BiasFigure& figure);
QSize biasFigureSize(const BiasFigure& figure);

} // namespace ropescope::views

#pragma once
#include <Eigen/Core>
#include <QColor>
#include <QRectF>
#include <QString>

#include <vector>

class QPainter;

namespace ropescope::views {

// Chart data, independent of where it is painted (widget, PNG, SVG, PDF).

struct BarChart {
    QString title;
    std::vector<QString> labels;
    std::vector<double> values;
    int highlighted = -1;
};

// Per text token: min / mean / max of its distances to the visual tokens (one row each).
struct ProfileChart {
    QString title;
    std::vector<int> tokens;  // token indices, in order
    Eigen::MatrixX4d profile; // min, mean, max, std
    int selectedRow = -1;
    std::vector<int> gapsBefore; // rows before which visual tokens sit in the sequence
};

// One H x W grid of values per visual block, drawn side by side on a shared colour scale.
struct HeatmapChart {
    QString title;
    QString subtitle;
    struct Grid {
        int rows = 0, cols = 0;
        std::vector<double> values; // row-major
        QString label;
    };
    std::vector<Grid> grids;
};

// How the rotary frequencies are spent: a strip of head_dim/2 cells coloured by the axis driving each pair
// (highest frequency first), under it whether the pair wraps, resolves or is constant across the visual
// grids, and the positional prior's decay along each axis alone.
struct FrequencyChart {
    QString title;
    QString subtitle;
    std::vector<QString> axes;
    std::vector<int> pairAxis; // per pair: index into axes; -1 for a pair that never turns (proportional rotary)
    std::vector<int> pairUse;  // per pair: 0 wraps, 1 resolves, 2 constant, 3 unrotated
    std::vector<double> distances;
    std::vector<std::vector<double>> decay; // per axis, at `distances`
};

void paintBarChart(QPainter& painter, const QRectF& area, const BarChart& chart);
void paintFrequencyChart(QPainter& painter, const QRectF& area, const FrequencyChart& chart);
void paintProfileChart(QPainter& painter, const QRectF& area, const ProfileChart& chart);
void paintHeatmapChart(QPainter& painter, const QRectF& area, const HeatmapChart& chart);

} // namespace ropescope::views

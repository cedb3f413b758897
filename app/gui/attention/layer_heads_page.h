#pragma once
#include "views/charts/chart_export.h"

#include <QWidget>

#include <memory>

class QComboBox;

namespace ropescope::model {
struct AttentionRun;
}
namespace ropescope::views {
class ChartView;
struct LayerHeadGrid;
} // namespace ropescope::views

namespace ropescope::gui {

// The Attention tab's "Layers x heads" view: every captured layer and head of a run as small multiples
// (maps, or each head's image-attention mass); a click opens that layer and head.
class LayerHeadsPage : public QWidget {
    Q_OBJECT
public:
    explicit LayerHeadsPage(QWidget* parent = nullptr);
    ~LayerHeadsPage() override;

    void setRun(std::shared_ptr<const model::AttentionRun> run); // null: nothing shown
    // The grid as a figure at the CLI's size (`attend --layers-heads`); an empty painter before a run.
    views::ChartPainter figure() const;
    QSize figureSize() const;
    // Its table, as `attend --layers-heads` writes layers_heads.csv; empty before a run.
    QByteArray table() const;
    // The cell the Map tab shows: its captured-layer row, and head (-1: mean or max).
    void select(int capturedRow, int head);

Q_SIGNALS:
    void opened(int layer, int head);
    void exportRequested();

private:
    void repaint();
    QComboBox* show_;
    views::ChartView* view_;
    // Shared with the view's painter: repaints follow slider ticks, no copy of every head's map per tick.
    std::shared_ptr<views::LayerHeadGrid> grid_;
    std::shared_ptr<const model::AttentionRun> run_;
};

} // namespace ropescope::gui

#pragma once
#include "core/session/explorer_state.h"
#include "views/charts/chart_export.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

namespace ropescope::model {
struct AttentionRun;
}
namespace ropescope::views {
class ChartView;
}

namespace ropescope::gui {

// The Attention tab's "Region" view (image region -> text): dragging on the picture selects merged-grid
// cells of one image; the chart shows, per captured layer, which question and answer tokens attend them.
class RegionPage : public QWidget {
    Q_OBJECT
public:
    explicit RegionPage(QWidget* parent = nullptr);
    ~RegionPage() override;

    // A new run: the region stays where its cells still exist (same image sizes), its attention is recomputed.
    void setRun(std::shared_ptr<const model::AttentionRun> run); // null: nothing shown, the region kept
    // The shown captured layer and head (the head combo box's index): the chart follows them.
    void show(int capturedLayer, int headIndex);

    void select(int row0, int col0, int row1, int col1, int image);
    void clear();
    // The chart as a figure at its natural size (`attend --region`); an empty painter before a run.
    views::ChartPainter figure() const;
    QSize figureSize() const;
    // Its table, as `attend --region` writes region.csv (the shown head); empty without a region.
    QByteArray table() const;
    QString regionText() const;              // "" without a region; CellRegion's form otherwise
    void restore(const QString& regionText); // a session's region; one it cannot mean is dropped
    std::vector<double> shares() const;      // the shown layer's shares per token; empty without a region
    // The run's prompt in the explorer: the explorer's view with the run's layout, scheme and layer, the
    // strongest question token selected, the three strongest and the region's image tokens highlighted.
    // Empty without a region.
    std::optional<session::ExplorerState> inExplorer(const session::ExplorerState& view, int modelLayers) const;

Q_SIGNALS:
    void edited(); // a drag finished or the region was cleared
    void showInExplorerRequested();
    void exportRequested();

private:
    void repaint();
    struct State;
    std::unique_ptr<State> s_;
    views::ChartView* view_;
};

} // namespace ropescope::gui

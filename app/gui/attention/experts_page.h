#pragma once
#include "views/charts/chart_export.h"

#include <QWidget>

#include <memory>

class QLabel;

namespace ropescope::model {
struct ExpertUsage;
}
namespace ropescope::views {
class ChartView;
struct ExpertUsageGrid;
} // namespace ropescope::views

namespace ropescope::gui {

// The Attention tab's "Experts" view, for mixture-of-experts models: per sparse layer and expert, the share of the
// prompt's image tokens and of its text tokens routed there, and image minus text (`attend --expert-usage`'s
// figure). A click on a cell says that expert's numbers under the chart. A dense model's run says it has none.
class ExpertsPage : public QWidget {
    Q_OBJECT
public:
    explicit ExpertsPage(QWidget* parent = nullptr);
    ~ExpertsPage() override;

    // The run's routing (empty for a dense model) and the model's line ("MoE: 8 experts, top-2 ...").
    void setUsage(const model::ExpertUsage& usage, const QString& moeNote);
    // The figure at the CLI's size; an empty painter without a MoE run.
    views::ChartPainter figure() const;
    QSize figureSize() const;
    // expert_usage.csv as `attend --expert-usage` writes it; empty without a MoE run.
    QByteArray table() const;

Q_SIGNALS:
    void exportRequested();

private:
    void repaint();
    void describe(int row, int expert);
    views::ChartView* view_;
    QLabel* note_;
    std::shared_ptr<views::ExpertUsageGrid> grid_;
    std::shared_ptr<model::ExpertUsage> usage_;
};

} // namespace ropescope::gui

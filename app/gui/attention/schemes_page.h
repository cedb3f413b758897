#pragma once
#include "core/model/engine/model_scheme.h"
#include "views/charts/attention_figures.h"
#include "views/charts/attention_heatmap.h"
#include "views/charts/chart_export.h"

#include <QWidget>

#include <vector>

class QListWidget;
class QPushButton;

namespace ropescope::model {
struct SchemeComparison;
}
namespace ropescope::views {
class ChartView;
}

namespace ropescope::gui {

// The Attention tab's "Schemes" view: a list of up to model::kMaxComparedSchemes schemes (the first is the
// reference of the shift), and the last comparison's maps side by side. The panel runs the comparison.
class SchemesPage : public QWidget {
    Q_OBJECT
public:
    explicit SchemesPage(QWidget* parent = nullptr);

    const std::vector<model::SchemeEntry>& entries() const { return entries_; }
    void setEntries(std::vector<model::SchemeEntry> entries);
    bool add(const model::SchemeEntry& entry); // false when the list is full
    void setRunning(bool running);             // a comparison in flight can be cancelled
    void showHint();                           // no comparison yet: what to do
    void showComparison(const model::SchemeComparison& comparison, const views::HeatmapOptions& options);
    const std::vector<double>& shifts() const { return shifts_; } // of the last comparison's rows
    // The comparison as a figure at its natural size (as `attend --schemes` writes it); an empty painter before one.
    views::ChartPainter figure() const;
    QSize figureSize() const;
    // Its table, as `attend --schemes` writes schemes.csv; empty before a comparison.
    QByteArray table() const { return table_; }

Q_SIGNALS:
    void addRequested();
    void compareRequested();
    void cancelRequested();
    void exportRequested();
    void edited(); // an entry removed (added ones come through add)

private:
    std::vector<model::SchemeEntry> entries_;
    std::vector<double> shifts_;
    QListWidget* list_;
    QPushButton* cancel_;
    views::ChartView* view_;
    std::shared_ptr<views::MapSheet> sheet_; // the last comparison's
    int cellWidth_ = 220;
    QByteArray table_; // the last comparison's
};

} // namespace ropescope::gui

#include "app/gui/attention/experts_page.h"

#include "app/reports/expert_usage_report.h"
#include "views/widgets/chart_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

namespace ropescope::gui {

ExpertsPage::ExpertsPage(QWidget* parent)
    : QWidget(parent), grid_(std::make_shared<views::ExpertUsageGrid>()), usage_(std::make_shared<model::ExpertUsage>())
{
    auto* box = new QVBoxLayout(this);
    auto* row = new QHBoxLayout;
    note_ = new QLabel("Run a mixture-of-experts model (Qwen3.5 MoE, Qwen3-VL MoE, GLM-4.5V) to see where its image and text tokens go.");
    note_->setObjectName("expertsNote");
    note_->setWordWrap(true); // a long note wraps in the side of the tab, never widening it
    // Four lines whatever it says: a click's longer note grew the header and moved the chart 28 px under the pointer
    // (issue 72 item 9). Its whole text is also its tooltip, for a narrow tab.
    note_->setFixedHeight(4 * note_->fontMetrics().lineSpacing() + 2);
    note_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    row->addWidget(note_, 1);
    auto* exportFigure = new QPushButton("Export...");
    exportFigure->setObjectName("exportExperts");
    exportFigure->setToolTip("The three grids as a figure (PNG, SVG or PDF) with expert_usage.csv beside it, as `attend --expert-usage` "
                             "writes them");
    connect(exportFigure, &QPushButton::clicked, this, &ExpertsPage::exportRequested);
    row->addWidget(exportFigure, 0, Qt::AlignTop);
    box->addLayout(row);
    view_ = new views::ChartView;
    view_->setObjectName("experts");
    view_->setToolTip("Sparse layers (rows) x experts (columns): the share of image tokens, of text tokens, and image minus text. "
                      "Click a cell for its numbers");
    box->addWidget(view_, 1);
    connect(view_, &views::ChartView::clicked, this, [this](QPointF at) {
        const auto [gridRow, expert] = views::expertUsageAt(QRectF(view_->rect()), *grid_, at);
        if (gridRow >= 0)
            describe(gridRow, expert);
    });
}

ExpertsPage::~ExpertsPage() = default;

void ExpertsPage::setUsage(const model::ExpertUsage& usage, const QString& moeNote)
{
    *usage_ = usage;
    if (usage.empty()) {
        *grid_ = views::ExpertUsageGrid();
        note_->setText("This model is dense: it has no experts to route to. Run a mixture-of-experts model (Qwen3.5 MoE, Qwen3-VL "
                       "MoE, GLM-4.5V) to see where its image and text tokens go.");
    } else {
        *grid_ =
            reports::expertUsageGrid(usage, QString("where %1 image and %2 text tokens go").arg(usage.imageTokens).arg(usage.textTokens));
        note_->setText(moeNote + ". Click a cell for its numbers.");
        note_->setToolTip(note_->text());
    }
    repaint();
}

void ExpertsPage::describe(int row, int expert)
{
    grid_->selectedRow = row;
    grid_->selectedExpert = expert;
    const size_t k = static_cast<size_t>(row), e = static_cast<size_t>(expert);
    note_->setText(QString("layer %1, expert %2: %3% of image tokens (mean weight %4), %5% of text tokens (mean weight %6); "
                           "image and text share %7% of their routing in this layer")
                       .arg(usage_->layers[k])
                       .arg(expert)
                       .arg(100 * usage_->imageShare[k][e], 0, 'f', 1)
                       .arg(usage_->imageWeight[k][e], 0, 'f', 3)
                       .arg(100 * usage_->textShare[k][e], 0, 'f', 1)
                       .arg(usage_->textWeight[k][e], 0, 'f', 3)
                       .arg(100 * reports::imageTextOverlap(*usage_, k), 0, 'f', 0));
    note_->setToolTip(note_->text());
    repaint();
}

views::ChartPainter ExpertsPage::figure() const
{
    if (usage_->empty())
        return {};
    auto grid = std::make_shared<views::ExpertUsageGrid>(*grid_);
    grid->selectedRow = grid->selectedExpert = -1;
    return [grid](QPainter& p, const QRectF& r) { views::paintExpertUsage(p, r, *grid); };
}

QSize ExpertsPage::figureSize() const
{
    return views::expertUsageFigureSize(*grid_);
}

QByteArray ExpertsPage::table() const
{
    return usage_->empty() ? QByteArray() : reports::expertUsageCsv(*usage_);
}

void ExpertsPage::repaint()
{
    if (usage_->empty()) {
        view_->setPainter({});
        return;
    }
    view_->setPainter([shared = grid_](QPainter& p, const QRectF& r) { views::paintExpertUsage(p, r, *shared); });
}

} // namespace ropescope::gui

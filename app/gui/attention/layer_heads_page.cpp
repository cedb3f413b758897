#include "app/gui/attention/layer_heads_page.h"

#include "app/reports/attention_tables.h"
#include "app/reports/map_pictures.h"
#include "views/widgets/chart_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QPainter>
#include <QVBoxLayout>

namespace ropescope::gui {

LayerHeadsPage::LayerHeadsPage(QWidget* parent) : QWidget(parent), grid_(std::make_shared<views::LayerHeadGrid>())
{
    auto* box = new QVBoxLayout(this);
    auto* row = new QHBoxLayout;
    show_ = new QComboBox;
    // Short item names, so the combo is not cut in a 1280x720 window; the tooltip says what each shows.
    show_->addItems({"maps", "image-attention mass"});
    show_->setToolTip("maps: each cell's text -> image map, scaled min-max on its own; image-attention mass: the share of "
                      "each layer and head's attention that goes to the image");
    row->addWidget(new QLabel("Show"));
    row->addWidget(show_, 1);
    auto* exportFigure = new QPushButton("Export...");
    exportFigure->setObjectName("exportLayerHeads");
    exportFigure->setToolTip("Every layer x head as a figure (PNG, SVG or PDF), as `attend --layers-heads` writes it");
    connect(exportFigure, &QPushButton::clicked, this, &LayerHeadsPage::exportRequested);
    row->addWidget(exportFigure);
    box->addLayout(row);
    view_ = new views::ChartView;
    view_->setObjectName("layerHeads");
    view_->setToolTip("Every layer (rows) x head (columns): click a cell to show that layer and head in the Map tab");
    box->addWidget(view_, 1);
    connect(show_, qOverload<int>(&QComboBox::currentIndexChanged), this, &LayerHeadsPage::repaint);
    connect(view_, &views::ChartView::clicked, this, [this](QPointF at) {
        const auto [gridRow, head] = views::layerHeadAt(QRectF(view_->rect()), *grid_, at);
        if (gridRow >= 0)
            Q_EMIT opened(grid_->layers[static_cast<size_t>(gridRow)], head);
    });
}

LayerHeadsPage::~LayerHeadsPage() = default;

void LayerHeadsPage::setRun(std::shared_ptr<const model::AttentionRun> run)
{
    run_ = std::move(run);
    if (!run_) { // a failed run or another model: nothing of the previous run stays on show (issue 72 item 3)
        *grid_ = views::LayerHeadGrid();
        view_->setPainter({});
        return;
    }
    *grid_ = reports::layerHeadGrid(*run_);
    grid_->title = "layers x heads, mean over question tokens";
}

void LayerHeadsPage::select(int capturedRow, int head)
{
    grid_->selectedRow = capturedRow;
    grid_->selectedHead = head;
    repaint();
}

views::ChartPainter LayerHeadsPage::figure() const
{
    if (grid_->maps.empty())
        return {};
    return
        [grid = std::make_shared<views::LayerHeadGrid>(*grid_)](QPainter& p, const QRectF& r) { views::paintLayerHeadGrid(p, r, *grid); };
}

QByteArray LayerHeadsPage::table() const
{
    return run_ ? reports::layersHeadsCsv(*run_) : QByteArray();
}

QSize LayerHeadsPage::figureSize() const
{
    return views::layerHeadFigureSize(*grid_);
}

void LayerHeadsPage::repaint()
{
    grid_->show = show_->currentIndex() == 1 ? views::LayerHeadGrid::Show::Mass : views::LayerHeadGrid::Show::Maps;
    if (grid_->maps.empty()) {
        view_->setPainter({});
        return;
    }
    view_->setPainter([shared = grid_](QPainter& p, const QRectF& r) { views::paintLayerHeadGrid(p, r, *shared); });
}

} // namespace ropescope::gui

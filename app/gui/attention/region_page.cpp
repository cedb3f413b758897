#include "app/gui/attention/region_page.h"

#include "app/gui/attention/attention_choices.h"
#include "app/reports/attention_tables.h"
#include "app/reports/map_pictures.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/region_attention.h"
#include "views/charts/region_chart.h"
#include "views/widgets/chart_view.h"

#include <QHBoxLayout>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

#include <array>

namespace ropescope::gui {

namespace {

bool regionFits(const model::CellRegion& region, const model::AttentionRequest& prompt)
{
    try {
        region.tokensIn(prompt);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

} // namespace

struct RegionPage::State {
    std::shared_ptr<const model::AttentionRun> run;
    std::optional<model::CellRegion> region;        // the selected cells (also while dragging)
    std::optional<model::RegionAttention> regionOf; // of the run, for regionHead
    int regionHead = -1;
    int layer = 0, head = 0; // the shown captured layer and head combo index
    std::shared_ptr<views::RegionChart> chart = std::make_shared<views::RegionChart>();
};

RegionPage::RegionPage(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>())
{
    auto* box = new QVBoxLayout(this);
    view_ = new views::ChartView;
    view_->setObjectName("regionView");
    view_->setToolTip("Drag on the picture to select image cells: which question and answer tokens attend them, per layer\n"
                      "(share of each token's image attention on the region; the dashed line is the region's area)");
    box->addWidget(view_, 1);
    auto* row = new QHBoxLayout;
    auto* show3d = new QPushButton("Show in 3-D");
    show3d->setObjectName("showRegionIn3d");
    show3d->setToolTip("The prompt's layout under the run's scheme in the explorer: the strongest token selected, the three\n"
                       "strongest and the region's image tokens highlighted");
    auto* clearButton = new QPushButton("Clear region");
    row->addStretch(1);
    row->addWidget(clearButton);
    auto* exportFigure = new QPushButton("Export...");
    exportFigure->setObjectName("exportRegion");
    exportFigure->setToolTip("The region chart as a figure (PNG, SVG or PDF), as `attend --region` writes it");
    connect(exportFigure, &QPushButton::clicked, this, &RegionPage::exportRequested);
    row->addWidget(exportFigure);
    row->addWidget(show3d);
    box->addLayout(row);
    const auto cellAt = [this](QPointF at) -> std::optional<std::array<int, 3>> { // image, row, column
        if (!s_->run)
            return std::nullopt;
        const views::PictureCell c = views::regionCellAt(QRectF(view_->rect()), reports::mapPictures(s_->run->prompt.images), at);
        if (c.picture < 0)
            return std::nullopt;
        const int cols = s_->run->prompt.images[static_cast<size_t>(c.picture)].cols;
        return std::array<int, 3>{c.picture, c.cell / cols, c.cell % cols};
    };
    const auto selectBetween = [this, cellAt](QPointF from, QPointF to) {
        const auto a = cellAt(from), b = cellAt(to);
        if (a && b && (*a)[0] == (*b)[0]) // a region lies on one image
            select((*a)[1], (*a)[2], (*b)[1], (*b)[2], (*a)[0]);
    };
    connect(view_, &views::ChartView::clicked, this, [selectBetween](QPointF at) { selectBetween(at, at); });
    connect(view_, &views::ChartView::dragged, this, selectBetween);
    connect(view_, &views::ChartView::dragFinished, this, [this, selectBetween](QPointF from, QPointF to) {
        selectBetween(from, to);
        Q_EMIT edited();
    });
    connect(clearButton, &QPushButton::clicked, this, [this] {
        clear();
        Q_EMIT edited();
    });
    connect(show3d, &QPushButton::clicked, this, &RegionPage::showInExplorerRequested);
    repaint();
}

RegionPage::~RegionPage() = default;

void RegionPage::setRun(std::shared_ptr<const model::AttentionRun> run)
{
    s_->run = std::move(run);
    s_->regionOf.reset(); // the region stays; its attention is the new run's
    if (!s_->run) {       // none (a failed run, another model): the region waits for the next
        repaint();
        return;
    }
    if (s_->region && !regionFits(*s_->region, s_->run->prompt))
        s_->region.reset(); // another image size or fewer images: those cells are not there
}

void RegionPage::show(int capturedLayer, int headIndex)
{
    s_->layer = capturedLayer;
    s_->head = headIndex;
    repaint();
}

void RegionPage::select(int row0, int col0, int row1, int col1, int image)
{
    const model::CellRegion region{row0, col0, row1, col1, image};
    if (s_->region && s_->region->toString() == region.toString() && s_->regionOf)
        return; // a drag repeats the same cell many times
    s_->region = region;
    s_->regionOf.reset();
    repaint();
}

void RegionPage::clear()
{
    s_->region.reset();
    s_->regionOf.reset();
    repaint();
}

QByteArray RegionPage::table() const
{
    return s_->regionOf ? reports::regionCsv(*s_->regionOf) : QByteArray();
}

QString RegionPage::regionText() const
{
    return s_->region ? s_->region->toString() : QString();
}

void RegionPage::restore(const QString& text)
{
    s_->region.reset();
    s_->regionOf.reset();
    if (text.isEmpty())
        return;
    try {
        s_->region = model::CellRegion::parse(text);
    } catch (const std::invalid_argument&) {
        // a region the session cannot mean is dropped, like a missing image
    }
}

std::vector<double> RegionPage::shares() const
{
    if (!s_->regionOf || !s_->run)
        return {};
    return s_->regionOf->share.at(static_cast<size_t>(s_->layer));
}

std::optional<session::ExplorerState> RegionPage::inExplorer(const session::ExplorerState& view, int modelLayers) const
{
    if (!s_->run || !s_->regionOf)
        return std::nullopt;
    const model::AttentionRun& run = *s_->run;
    const model::RegionAttention& r = *s_->regionOf;
    const size_t layer = static_cast<size_t>(s_->layer);
    session::ExplorerState s = view; // the explorer's view settings, with the run's prompt and scheme
    s.layout = run.result.layout.toString();
    s.params = run.scheme.params;
    s.age = run.scheme.age;
    s.ageLayers = modelLayers;
    s.layer = run.layers[layer];
    s.cameraState.reset();
    s.highlighted.clear();
    int marked = 0;
    for (int t : r.strongest(layer, static_cast<int>(r.tokens.size()))) {
        const model::MapToken& token = r.tokens[static_cast<size_t>(t)];
        if (token.answer) // answer tokens come after the prompt: not in its layout
            continue;
        if (marked == 0)
            s.selectedToken = static_cast<int>(token.index);
        s.highlighted.push_back(static_cast<int>(token.index));
        if (++marked == 3)
            break;
    }
    for (int c : r.cells)
        s.highlighted.push_back(static_cast<int>(run.prompt.imageTokens[static_cast<size_t>(c)]));
    return s;
}

views::ChartPainter RegionPage::figure() const
{
    if (!s_->run)
        return {};
    return
        [chart = std::make_shared<views::RegionChart>(*s_->chart)](QPainter& p, const QRectF& r) { views::paintRegionChart(p, r, *chart); };
}

QSize RegionPage::figureSize() const
{
    return views::regionChartSize(*s_->chart);
}

void RegionPage::repaint()
{
    views::RegionChart& chart = *s_->chart;
    chart = views::RegionChart{};
    QString hint = "Run the model, then drag on the picture to select image cells.";
    if (s_->run) {
        const model::AttentionRun& run = *s_->run;
        const model::AttentionRequest& a = run.prompt;
        hint = "Drag on the picture to select image cells: which tokens attend them, per layer.";
        chart.title = "image region \u2192 text";
        if (!s_->region || !regionFits(*s_->region, a)) { // the pictures as they are; with a region, outlineCells draws them
            std::vector<QImage> plain;
            for (const model::PromptImage& image : a.images)
                plain.push_back(image.resized);
            chart.image = views::pictureStrip(plain);
        } else {
            const model::CellRegion& region = *s_->region;
            if (!s_->regionOf || s_->regionHead != s_->head) {
                s_->regionOf = model::regionAttention(run, region.tokensIn(a), headChoiceAt(s_->head));
                s_->regionHead = s_->head;
            }
            const model::RegionAttention& r = *s_->regionOf;
            const model::PromptImage& image = a.images[static_cast<size_t>(region.image)];
            chart.image = views::outlineCells(reports::mapPictures(a.images), region.image, region.cells(image.rows, image.cols));
            chart.title = QString("which tokens attend %1rows %2-%3, columns %4-%5")
                              .arg(a.images.size() > 1 ? QString("image %1, ").arg(region.image + 1) : QString())
                              .arg(std::min(region.row0, region.row1))
                              .arg(std::max(region.row0, region.row1))
                              .arg(std::min(region.col0, region.col1))
                              .arg(std::max(region.col0, region.col1));
            for (const model::MapToken& t : r.tokens) {
                chart.tokens << "'" + QString(t.text).replace('\n', "\\n") + "'";
                chart.answer.push_back(t.answer);
            }
            chart.layers = r.layers;
            chart.share = r.share;
            chart.shownLayer = s_->layer;
            chart.area = r.area;
        }
    }
    view_->setPainter([shared = s_->chart, hint](QPainter& p, const QRectF& r) { views::paintRegionChart(p, r, *shared, hint); });
}

} // namespace ropescope::gui

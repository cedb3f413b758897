#include "app/gui/attention/schemes_page.h"

#include "app/reports/attention_tables.h"
#include "app/reports/map_pictures.h"
#include "core/model/analysis/scheme_comparison.h"
#include "views/charts/attention_figures.h"
#include "views/widgets/chart_view.h"

#include <QHBoxLayout>
#include <QListWidget>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace ropescope::gui {

namespace {

// The sheet in `area` with the number of columns that shows its maps largest: three columns in a tall narrow view cut
// every caption ("circle R 10 alpha 0.79...") beside half an empty pane (issue 72 item 8).
void paintFittedSheet(QPainter& p, const QRectF& area, views::MapSheet sheet)
{
    const int n = std::max<int>(1, static_cast<int>(sheet.maps.size()));
    constexpr int kProbe = 200; // a cell width to measure each arrangement's shape at
    double best = 0;
    int columns = 1;
    for (int c = 1; c <= n; ++c) {
        sheet.columns = c;
        const QSize size = views::mapSheetSize(sheet, kProbe);
        const double scale = std::min(area.width() / size.width(), area.height() / size.height());
        if (kProbe * scale > best + 0.5) {
            best = kProbe * scale;
            columns = c;
        }
    }
    sheet.columns = columns;
    views::paintMapSheet(p, area, sheet);
}

} // namespace

SchemesPage::SchemesPage(QWidget* parent) : QWidget(parent)
{
    auto* box = new QVBoxLayout(this);
    auto* row = new QHBoxLayout;
    list_ = new QListWidget;
    list_->setObjectName("comparedSchemes");
    list_->setMaximumHeight(90);
    list_->setToolTip(
        QString("Up to %1 schemes, run one after another on this image and question (the first is the reference of the shift)")
            .arg(model::kMaxComparedSchemes));
    auto* buttons = new QVBoxLayout;
    auto* add = new QPushButton("Add explorer's scheme");
    add->setToolTip("The scheme, parameters and AGE schedule set in the Parameters panel now");
    auto* remove = new QPushButton("Remove");
    auto* compare = new QPushButton("Compare");
    compare->setObjectName("compareSchemes");
    cancel_ = new QPushButton("Cancel");
    cancel_->setEnabled(false);
    auto* exportFigure = new QPushButton("Export...");
    exportFigure->setObjectName("exportSchemes");
    exportFigure->setToolTip("The schemes side by side as a figure (PNG, SVG or PDF)");
    connect(exportFigure, &QPushButton::clicked, this, &SchemesPage::exportRequested);
    for (QPushButton* b : {add, remove, compare, cancel_, exportFigure})
        buttons->addWidget(b);
    row->addWidget(list_, 1);
    row->addLayout(buttons);
    box->addLayout(row);
    view_ = new views::ChartView;
    view_->setObjectName("schemesView");
    box->addWidget(view_, 1);
    connect(add, &QPushButton::clicked, this, &SchemesPage::addRequested);
    connect(remove, &QPushButton::clicked, this, [this] {
        const int at = list_->currentRow();
        if (at >= 0 && at < static_cast<int>(entries_.size())) {
            entries_.erase(entries_.begin() + at);
            delete list_->takeItem(at);
            Q_EMIT edited();
        }
    });
    connect(compare, &QPushButton::clicked, this, &SchemesPage::compareRequested);
    connect(cancel_, &QPushButton::clicked, this, &SchemesPage::cancelRequested);
}

void SchemesPage::setEntries(std::vector<model::SchemeEntry> entries)
{
    entries_ = std::move(entries);
    list_->clear();
    for (const model::SchemeEntry& e : entries_) {
        list_->addItem(e.label);
        list_->item(list_->count() - 1)->setToolTip(e.label); // a long label is cut by the list's width
    }
}

bool SchemesPage::add(const model::SchemeEntry& entry)
{
    if (entries_.size() >= static_cast<size_t>(model::kMaxComparedSchemes))
        return false;
    entries_.push_back(entry);
    list_->addItem(entry.label);
    list_->item(list_->count() - 1)->setToolTip(entry.label);
    return true;
}

void SchemesPage::setRunning(bool running)
{
    cancel_->setEnabled(running);
}

void SchemesPage::showHint()
{
    shifts_.clear();
    sheet_.reset();
    view_->setPainter([](QPainter& p, const QRectF& r) {
        p.setPen(Qt::darkGray);
        p.drawText(r.adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap,
                   QString("Set a scheme in the Parameters panel and press \"Add explorer's scheme\" (up to %1), then Compare: each "
                           "scheme's map at the shown layer, its answer, PTD, prior spread and shift from the first.")
                       .arg(model::kMaxComparedSchemes));
    });
}

void SchemesPage::showComparison(const model::SchemeComparison& c, const views::HeatmapOptions& options)
{
    setRunning(false);
    shifts_.clear();
    table_ = reports::schemesCsv(c);
    views::MapSheet sheet;
    sheet.title = QString("layer %1, mean over heads and question tokens (* untrained)").arg(c.layer);
    sheet.columns = std::min<int>(3, static_cast<int>(c.rows.size()));
    for (const model::SchemeRow& r : c.rows) {
        sheet.maps.push_back({views::attentionOverlay(reports::mapPictures(c.images), r.map, options), r.caption()});
        shifts_.push_back(r.shift);
    }
    sheet_ = std::make_shared<views::MapSheet>(sheet);
    // The exported figure's cell: wide enough for a readable map and its caption lines (660x340 for three schemes was a
    // thumbnail: issue 72 item 6).
    cellWidth_ = std::clamp(views::stripSize(reports::mapPictures(c.images)).width(), 360, 480 * static_cast<int>(c.images.size()));
    view_->setPainter([sheet](QPainter& p, const QRectF& r) { paintFittedSheet(p, r, sheet); });
}

views::ChartPainter SchemesPage::figure() const
{
    if (!sheet_)
        return {};
    return [sheet = sheet_](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, *sheet); };
}

QSize SchemesPage::figureSize() const
{
    return sheet_ ? views::mapSheetSize(*sheet_, cellWidth_) : QSize();
}

} // namespace ropescope::gui

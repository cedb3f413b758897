#include "app/gui/attention/map_page.h"

#include "views/charts/attention_figures.h"
#include "views/widgets/fit_image.h"

#include <QBuffer>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace ropescope::gui {

MapPage::MapPage(QWidget* parent) : QWidget(parent)
{
    auto* images = new QVBoxLayout(this);
    image_ = new views::FitImage(QSize(240, 240));
    image_->setObjectName("attentionMap");
    images->addWidget(image_, 2);
    // The colour scale of the map: attention is min-max normalised over the image, then gamma-shaped.
    colourBar_ = new QLabel;
    colourBar_->setObjectName("attentionScale");
    colourBar_->setAlignment(Qt::AlignCenter);
    colourBar_->setToolTip("Attention per image patch, min-max normalised over the image, then shaped by the contrast gamma");
    images->addWidget(colourBar_);
    mask_ = new QLabel;
    mask_->setObjectName("attentionMask");
    mask_->setWordWrap(true);
    mask_->setAlignment(Qt::AlignCenter);
    mask_->setToolTip("The shown layer's attention mask: a sliding layer sees only the last `window` positions, so image tokens "
                      "farther back get no attention by construction, not by the model's choice. Hatched cells: hidden by the "
                      "mask from every token the map averages (crossed) or from some of them (lined).");
    mask_->hide();
    images->addWidget(mask_);
    auto* exports = new QHBoxLayout;
    auto* exportMap = new QPushButton("Export map...");
    exportMap->setObjectName("exportMap");
    exportMap->setToolTip("The heatmap with its colour bar and caption (question, answer, layer, head, scheme, every image) as PNG");
    auto* exportTokens = new QPushButton("Export per-token maps...");
    exportTokens->setObjectName("exportTokenMaps");
    exportTokens->setToolTip(
        "Every question and answer token's map at the shown layer, as `attend --per-token` writes it (PNG, SVG or PDF)");
    exports->addStretch(1);
    exports->addWidget(exportMap);
    exports->addWidget(exportTokens);
    exports->addStretch(1);
    images->addLayout(exports);
    connect(exportMap, &QPushButton::clicked, this, &MapPage::exportMapRequested);
    connect(exportTokens, &QPushButton::clicked, this, &MapPage::exportTokensRequested);
    shares_ = new QLabel;
    shares_->setObjectName("imageShares");
    shares_->setWordWrap(true);
    shares_->setAlignment(Qt::AlignCenter);
    shares_->hide();
    images->addWidget(shares_);
    // The comparison row: the model's own scheme, and where attention moved from it.
    comparison_ = new QWidget;
    auto* row = new QGridLayout(comparison_);
    own_ = new views::FitImage(QSize(120, 120));
    own_->setObjectName("ownMap");
    difference_ = new views::FitImage(QSize(120, 120));
    difference_->setObjectName("differenceMap");
    shift_ = new QLabel;
    shift_->setObjectName("shift");
    shift_->setWordWrap(true);
    auto* differenceTitle = new QLabel("difference (red: more attention than own, blue: less)");
    differenceTitle->setWordWrap(true);
    differenceTitle->setAlignment(Qt::AlignHCenter);
    row->addWidget(new QLabel("model's own scheme"), 0, 0, Qt::AlignHCenter);
    row->addWidget(differenceTitle, 0, 1);
    row->addWidget(own_, 1, 0);
    row->addWidget(difference_, 1, 1);
    // Centred as text, not as a widget: a widget aligned in its cell keeps its one-line width and is cut.
    shift_->setAlignment(Qt::AlignHCenter);
    row->addWidget(shift_, 2, 0, 1, 2);
    comparison_->hide();
    images->addWidget(comparison_, 1);
}

void MapPage::showPictures(const std::vector<QImage>& images)
{
    std::vector<QImage> scaled;
    for (const QImage& image : images)
        scaled.push_back(image.scaledToHeight(240, Qt::SmoothTransformation));
    image_->setImage(views::pictureStrip(scaled));
}

void MapPage::showMap(const QImage& overlay, const views::HeatmapOptions& options)
{
    if (colourBarMap_ != static_cast<int>(options.colormap)) { // repaints follow every slider tick: draw the scale once per map
        colourBarMap_ = static_cast<int>(options.colormap);
        colourBar_->setText(colourScaleHtml(options));
    }
    image_->setImage(overlay);
}

void MapPage::showShares(const QString& text)
{
    shares_->setText(text);
    shares_->setVisible(!text.isEmpty());
}

void MapPage::showMask(const QString& text)
{
    mask_->setText(text);
    mask_->setVisible(!text.isEmpty());
}

QString MapPage::maskText() const
{
    return mask_->isVisibleTo(this) ? mask_->text() : QString();
}

void MapPage::showComparison(const QImage& own, const QImage& difference, const QString& shift)
{
    comparison_->show();
    own_->setImage(own);
    difference_->setImage(difference);
    shift_->setText(shift);
}

void MapPage::hideComparison()
{
    comparison_->hide();
}

QString MapPage::colourScaleHtml(const views::HeatmapOptions& options)
{
    const QImage bar = views::colourBar(options, 160, 12);
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    bar.save(&buffer, "PNG");
    return QString("least <img src=\"data:image/png;base64,%1\"> most").arg(QString::fromLatin1(png.toBase64()));
}

} // namespace ropescope::gui

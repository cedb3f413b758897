#pragma once
#include "views/charts/attention_heatmap.h"

#include <QImage>
#include <QWidget>

#include <vector>

class QLabel;

namespace ropescope::views {
class FitImage;
}

namespace ropescope::gui {

// The Attention tab's "Map" view: the map over the prompt's images, its colour scale, each image's share
// of the attention, and (when comparing) the model's own scheme's map and the difference beside it.
// It draws what the panel computed; it computes nothing.
class MapPage : public QWidget {
    Q_OBJECT
public:
    explicit MapPage(QWidget* parent = nullptr);

    void showPictures(const std::vector<QImage>& images); // before a run: the prompt's images side by side
    void showMap(const QImage& overlay, const views::HeatmapOptions& options);
    void showShares(const QString& text); // empty: hidden (a single image)
    // The shown layer's mask (Gemma: "layer 5: sliding (window 8)") and the legend of the cells it hid, hatched on the
    // map; empty: hidden (a family whose layers are all one kind).
    void showMask(const QString& text);
    QString maskText() const; // what showMask shows, for the export's caption
    void showComparison(const QImage& own, const QImage& difference, const QString& shift);
    void hideComparison();

    // The colormap as the maps draw it, from least to most, as rich text with an inline image.
    static QString colourScaleHtml(const views::HeatmapOptions& options);

Q_SIGNALS:
    void exportMapRequested();    // the heatmap with its colour bar and caption
    void exportTokensRequested(); // every token's map at the shown layer (attend --per-token's sheet)

private:
    views::FitImage *image_, *own_, *difference_; // drawn whole at any size (issue 56 item 1)
    QLabel *colourBar_, *shares_, *shift_, *mask_;
    QWidget* comparison_;
    int colourBarMap_ = -1; // the colormap colourBar_ shows
};

} // namespace ropescope::gui

#pragma once
#include <QImage>
#include <QRect>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace ropescope::views {

struct HeatmapOptions {
    double opacity = 0.55;  // of the heat layer over the image
    double smoothing = 1.0; // Gaussian sigma in grid cells (0: none)
    double gamma = 0.6;     // power-law contrast applied after normalising to [0, 1]
    enum class Colormap { Viridis, Jet } colormap = Colormap::Jet;
};

// The Circle-RoPE paper's attention-map recipe (sec. 5.6) from a rows x cols grid of attention values:
// bilinear upsampling to the image size, Gaussian smoothing, min-max normalisation, power-law contrast,
// colormap, blended over the image.
QImage attentionOverlay(const QImage& image, const std::vector<float>& grid, int rows, int cols, const HeatmapOptions& options);

// Where attention moved from one run to another (e.g. the model's own scheme -> another): both maps
// renormalised over the image, smoothed and upsampled as above, then `to - from` on a diverging scale
// symmetric about zero: red where `to` looks more, blue where less, white where unchanged. The
// colormap option is ignored; gamma shapes |difference|.
QImage attentionDifferenceOverlay(const QImage& image, const std::vector<float>& from, const std::vector<float>& to, int rows, int cols,
                                  const HeatmapOptions& options);

// One picture a map is drawn on: the image as the model saw it and its merged grid. A prompt with several
// images has one picture each, and a map over all of their tokens (image after image, row-major each).
struct MapPicture {
    QImage image;
    int rows = 0, cols = 0;
};
using MapPictures = std::vector<MapPicture>;

// The pictures side by side (tops aligned, kPictureGap pixels apart, white around), each with its slice of
// `grid` drawn as above but on one colour scale, so colours compare across images. One picture: exactly
// attentionOverlay(image, grid, rows, cols, options).
QImage attentionOverlay(const MapPictures& pictures, const std::vector<float>& grid, const HeatmapOptions& options);

// The colour scale of `options`' colormap from least (left) to most, drawn by the maps' own code (full
// opacity, no smoothing or gamma), `width` x `height` pixels: the bar under a map on screen and in exports.
QImage colourBar(const HeatmapOptions& options, int width, int height);
// The heatmap as a figure (the window's export and `attend`'s heatmap.png): the overlay, under it the colour bar
// of `options` (least .. most), then the caption lines, each wrapped to the figure's width (at least 360 px).
QImage captionedHeatmap(const QImage& overlay, const HeatmapOptions& options, const QStringList& caption);
// The same for a difference: one symmetric scale over every picture.
QImage attentionDifferenceOverlay(const MapPictures& pictures, const std::vector<float>& from, const std::vector<float>& to,
                                  const HeatmapOptions& options);
// Marks the cells a decoder layer's mask hid (issue 73 §3: a sliding window's cut is not the model's choice) over
// `overlay`, laid out as attentionOverlay lays `pictures` out. `hidden` holds one mark per token of the map (every
// picture's cells, image after image): 2 hidden from every row the map averages (white cross-hatch), 1 from some of
// them (white diagonal lines), 0 seen by all. The overlay unchanged when nothing is hidden or the sizes disagree.
QImage hatchHiddenCells(const QImage& overlay, const MapPictures& pictures, const std::vector<uint8_t>& hidden);
// The legend of those marks in one line ("hatched: image tokens layer 5's mask, sliding (window 8), hid: crossed from
// every question token (6 of 12), lined from some (6)"); empty when nothing is hidden. `rows` names what the map
// averages, singular ("question token", "token").
QString hiddenCellsLegend(const std::vector<uint8_t>& hidden, int layer, const QString& kind, const QString& rows);

// Lays pictures out as the overlays above do: where picture k lies in the strip, and the strip's size.
constexpr int kPictureGap = 8;
QRect pictureRect(const MapPictures& pictures, size_t k);
QSize stripSize(const MapPictures& pictures);
// `images` (one per picture, e.g. each with cells outlined) placed as the overlays place them.
QImage pictureStrip(const std::vector<QImage>& images);

} // namespace ropescope::views

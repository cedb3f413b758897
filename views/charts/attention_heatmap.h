#pragma once
#include <QImage>

#include <vector>

namespace ropescope::views {

struct HeatmapOptions {
    double opacity = 0.55;    // of the heat layer over the image
    double smoothing = 1.0;   // Gaussian sigma in grid cells (0: none)
    double gamma = 0.6;       // power-law contrast applied after normalising to [0, 1]
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

} // namespace ropescope::views

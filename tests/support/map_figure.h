#pragma once
// heatmap.png is a figure (views::captionedHeatmap): the map centred at the top, at least 360 px wide, and
// under it the colour bar and the caption. Whether an image is that figure of a map of `map`'s size.
#include <QImage>

#include <algorithm>

namespace ropescope::test {

inline bool isMapFigure(const QImage& figure, QSize map)
{
    if (figure.width() != std::max(map.width(), 360) || figure.height() < map.height() + 14 + 16)
        return false;
    // The bar's middle row, under the map: coloured (not the white around it) at the figure's centre.
    const int barRow = map.height() + 8 + 7;
    const QColor c = figure.pixelColor(figure.width() / 2, barRow);
    return !(c.red() > 245 && c.green() > 245 && c.blue() > 245);
}

} // namespace ropescope::test

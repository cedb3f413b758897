#include "views/scene/colormap.h"

#include <algorithm>
#include <cmath>

namespace ropescope::views {

Rgb viridis(double t)
{
    // Nine samples of matplotlib's viridis, linearly interpolated.
    static const double stops[9][3] = {{68, 1, 84},    {71, 44, 122}, {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
                                       {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}};
    t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 8.0;
    const int i = std::min(7, static_cast<int>(t));
    const double f = t - i;
    Rgb out;
    for (int c = 0; c < 3; ++c)
        out[static_cast<size_t>(c)] = static_cast<std::uint8_t>(std::lround(stops[i][c] * (1 - f) + stops[i + 1][c] * f));
    return out;
}

Rgb rowColColour(int row, int rows, int col, int cols)
{
    const double hue = cols > 1 ? 0.83 * col / (cols - 1) : 0.0;          // red .. magenta
    const double light = rows > 1 ? 0.30 + 0.42 * row / (rows - 1) : 0.5; // dark top row .. light bottom
    // HSL -> RGB with saturation 0.75
    const double s = 0.75;
    const double q = light < 0.5 ? light * (1 + s) : light + s - light * s;
    const double p = 2 * light - q;
    auto channel = [&](double t) {
        t -= std::floor(t);
        double v;
        if (t < 1.0 / 6)
            v = p + (q - p) * 6 * t;
        else if (t < 0.5)
            v = q;
        else if (t < 2.0 / 3)
            v = p + (q - p) * (2.0 / 3 - t) * 6;
        else
            v = p;
        return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255));
    };
    return {channel(hue + 1.0 / 3), channel(hue), channel(hue - 1.0 / 3)};
}

} // namespace ropescope::views

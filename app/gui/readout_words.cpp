#include "app/gui/readout_words.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

namespace ropescope::gui {

QString groupedPattern(const std::string& pattern)
{
    QStringList groups;
    for (size_t i = 0; i < std::min<size_t>(pattern.size(), 36); i += 6)
        groups << QString::fromStdString(pattern.substr(i, 6));
    return groups.join(' ') + (pattern.size() > 36 ? " ..." : "");
}

namespace {

QString number(double v)
{
    return QString::number(std::abs(v) < 5e-10 ? 0.0 : v, 'f', 6);
}

} // namespace

QString effectiveRadius(const session::Readouts& readouts, const geometry::SchemeParams& params)
{
    // The auto modes scale R with each grid's extent: say what R came out.
    const auto& rings = readouts.table.rings;
    if (params.circle.radiusMode == geometry::RadiusMode::Fixed || rings.empty())
        return {};
    double lo = INFINITY, hi = -INFINITY;
    for (const geometry::Ring& r : rings) {
        lo = std::min(lo, r.radius);
        hi = std::max(hi, r.radius);
    }
    return hi - lo < 1e-9 ? QString("R = %1").arg(lo, 0, 'g', 4) : QString("R = %1..%2").arg(lo, 0, 'g', 4).arg(hi, 0, 'g', 4);
}

QString ptdReadout(const session::Readouts& readouts)
{
    if (readouts.ptdBySchemes.empty())
        return readouts.table.textTokens.empty() || readouts.table.blocks.empty() ? "PTD: n/a (needs text and visual tokens)"
                                                                                  : "PTD: n/a (too many distances; see the warning)";
    QString s = QString("PTD %1 (%2)").arg(number(readouts.ptd.mean), QString::fromStdString(readouts.table.schemeLabel()));
    if (readouts.ptd.perBlock.size() > 1) {
        QStringList blocks;
        for (double v : readouts.ptd.perBlock)
            blocks << QString::number(std::abs(v) < 5e-10 ? 0.0 : v, 'f', 4);
        s += " per block: " + blocks.mid(0, 8).join(", ") + (blocks.size() > 8 ? ", ..." : "");
    }
    const auto& c = readouts.crowding;
    s += QString("\nvisual tokens %1, collisions %2, min pair distance %3")
             .arg(readouts.table.visualTokenCount())
             .arg(c.collisions)
             .arg(std::isfinite(c.minPairDistance) ? QString::number(c.minPairDistance, 'g', 4) : "n/a");
    return s;
}

QString selectionReadout(const session::Readouts& readouts)
{
    const int t = readouts.selectedText;
    if (t < 0 || readouts.ptdBySchemes.empty())
        return "Click a text token to select it.";
    const auto& tokens = readouts.table.textTokens;
    const auto row = static_cast<Eigen::Index>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin());
    const auto& p = readouts.ptd.profiles;
    QString s = QString("Token %1: distance to visual tokens min %2, mean %3, max %4, std %5; deviation %6")
                    .arg(t)
                    .arg(p(row, 0), 0, 'f', 3)
                    .arg(p(row, 1), 0, 'f', 3)
                    .arg(p(row, 2), 0, 'f', 3)
                    .arg(p(row, 3), 0, 'f', 4)
                    .arg(number(readouts.ptd.perToken(row)));
    if (readouts.prior)
        s += QString("\nPrior map spread %1 (std %2)").arg(readouts.prior->spread, 0, 'f', 3).arg(readouts.prior->stddev, 0, 'f', 3);
    return s;
}

} // namespace ropescope::gui

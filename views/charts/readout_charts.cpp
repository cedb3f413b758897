#include "views/charts/readout_charts.h"

#include "core/geometry/frequency_usage.h"

#include <cmath>

namespace ropescope::views {
using namespace geometry;

BarChart ptdChart(const session::Readouts& r)
{
    BarChart c;
    c.title = "PTD by scheme, layout " + QString::fromStdString(r.table.layout.toString());
    for (const session::SchemePtd& s : r.ptdBySchemes) {
        if (s.custom == r.table.customScheme && (!s.custom.empty() || s.kind == r.table.scheme))
            c.highlighted = static_cast<int>(c.values.size());
        c.labels.push_back(QString::fromStdString(s.custom.empty() ? schemeName(s.kind) : s.custom));
        c.values.push_back(std::abs(s.ptd) < 1e-9 ? 0.0 : s.ptd);
    }
    return c;
}

ProfileChart profileChart(const session::Readouts& r)
{
    ProfileChart c;
    c.title = "Distance profile (" + QString::fromStdString(r.table.schemeLabel()) + ")";
    c.tokens = r.table.textTokens;
    c.profile = r.ptd.profiles;
    for (size_t i = 0; i < c.tokens.size(); ++i) {
        if (c.tokens[i] == r.selectedText) {
            c.selectedRow = static_cast<int>(i);
            c.title += QString(", token %1 marked").arg(r.selectedText);
        }
        if (i > 0 && c.tokens[i] != c.tokens[i - 1] + 1)
            c.gapsBefore.push_back(static_cast<int>(i));
    }
    return c;
}

HeatmapChart priorChart(const session::Readouts& r)
{
    HeatmapChart c;
    if (!r.prior) {
        c.title = "Positional prior: select a text token";
        return c;
    }
    const PriorMap& m = *r.prior;
    c.title = QString("Positional prior from token %1").arg(m.textToken);
    c.subtitle = QString("spread %1, std %2, %3")
                     .arg(m.spread, 0, 'f', 3)
                     .arg(m.stddev, 0, 'f', 3)
                     .arg(QString::fromStdString(r.table.allocation.toString()));
    Eigen::Index at = 0;
    constexpr size_t kMaxGrids = 8; // more would shrink cells below legibility
    for (const VisualBlock& b : r.table.blocks) {
        if (c.grids.size() < kMaxGrids) {
            HeatmapChart::Grid g;
            g.rows = b.rows;
            g.cols = b.cols;
            g.values.assign(m.values.data() + at, m.values.data() + at + b.size());
            g.label = r.table.layout.segments[static_cast<size_t>(b.segment)].kind == SegmentKind::Video
                ? QString("seg %1 frame %2").arg(b.segment).arg(b.frame)
                : QString("image (seg %1)").arg(b.segment);
            c.grids.push_back(std::move(g));
        }
        at += b.size();
    }
    if (r.table.blocks.size() > kMaxGrids)
        c.subtitle += QString(" (first %1 of %2 blocks)").arg(kMaxGrids).arg(r.table.blocks.size());
    return c;
}

FrequencyChart frequencyChart(const PositionTable& table)
{
    const FrequencyUsage u = frequencyUsage(table);
    FrequencyChart c;
    c.title = QString("Frequencies (%1, %2)")
                  .arg(QString::fromStdString(table.schemeLabel()), QString::fromStdString(table.allocation.toString()));
    QStringList spans;
    for (size_t a = 0; a < u.axes.size(); ++a)
        spans << QString("%1 %2").arg(QString::fromStdString(u.axes[a])).arg(u.spans[a], 0, 'g', 4);
    // Per head (MHRoPE): each axis' heads turn every pair, so the strip shows each head group's pairs in turn.
    const QString strip = table.allocation.perHead() ? QString("each axis' heads (of %1): all pairs high -> low").arg(table.rotary.heads)
                                                     : QString("pairs high -> low frequency");
    // Which dims the pairs turn: (j, j+d/2) for NeoX's half split, (2j, 2j+1) for GLM's adjacent pairs; a proportional
    // rotary's pairs sit on the whole head's halves (j, j + head_dim/2).
    const geometry::RotaryConfig& r = table.rotary;
    const int half = r.proportional ? r.headDim / 2 : r.halfDim();
    const QString dims = r.pairing == geometry::RotaryPairing::Adjacent ? QString("pair j turns dims (2j, 2j+1)")
                                                                        : QString("pair j turns dims (j, j+%1)").arg(half);
    c.subtitle = QString("%1 (%2); span in the visual grids: %3").arg(strip, dims, spans.join(", "));
    if (r.proportional) // Gemma 4's full layers: the strip shows every pair of the head, the unturned ones grey
        c.subtitle += QString("; proportional: pairs 0-%1 turn at theta^(-2j/%2), pairs %3-%4 (dims %3-%5 and %6-%7) never turn")
                          .arg(r.halfDim() - 1)
                          .arg(r.headDim)
                          .arg(r.halfDim())
                          .arg(half - 1)
                          .arg(half - 1)
                          .arg(half + r.halfDim())
                          .arg(r.headDim - 1);
    else if (r.unrotatedDims() > 0) // partial rotary: say what the strip leaves out
        c.subtitle += QString("; dims %1-%2 of %3 are not rotated (no position)").arg(r.rotaryDim()).arg(r.headDim - 1).arg(r.headDim);
    if (r.linearFactor != 1.0)
        c.subtitle += QString("; every frequency / %1 (linear scaling)").arg(r.linearFactor);
    for (const std::string& a : u.axes)
        c.axes.push_back(QString::fromStdString(a));
    for (const FrequencyUsage::Pair& p : u.pairs) {
        c.pairAxis.push_back(p.component);
        c.pairUse.push_back(static_cast<int>(p.use));
    }
    c.distances = u.distances;
    c.decay = u.decay;
    return c;
}

} // namespace ropescope::views

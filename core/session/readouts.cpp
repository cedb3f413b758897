#include "core/session/readouts.h"

#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"

#include <cmath>

namespace ropescope::session {
using namespace geometry;

double ReadoutEngine::schemePtd(const Layout& layout, const SchemeParams& given)
{
    // The parameters the scheme never reads are reset to their defaults (the parameter table's "reads"), so a
    // PTD cached for one alpha serves every alpha of the schemes that ignore it (the chart of all schemes
    // recomputed every PTD on every alpha step before).
    const SchemeParams params = placementParams(given);
    const std::string key = layout.toString();
    for (const CachedPtd& c : cache_)
        if (c.layout == key && c.params == params)
            return c.ptd;
    if (cache_.size() > 256)
        cache_.clear();
    const double value = computePtd(buildPositionTable(layout, params)).mean;
    ++ptdComputations_;
    cache_.push_back({key, params, value});
    return value;
}

Readouts ReadoutEngine::compute(const ExplorerState& state)
{
    Readouts r;
    r.table = state.buildTable();
    const PositionTable& t = r.table;
    r.crowding = visualCrowding(t);
    if (t.textTokens.empty() || t.blocks.empty()) {
        r.warnings.push_back("PTD needs both text and visual tokens in the layout");
        return r;
    }
    // A layout past PTD's limit is still drawn, with its prior and crowding: only PTD and its chart are left out.
    const double pairs = static_cast<double>(t.textTokens.size()) * static_cast<double>(t.visualTokenCount());
    const bool ptdInReach = pairs <= static_cast<double>(kMaxPtdPairs);
    try {
        r.ptd = computePtd(t);
    } catch (const InvalidInput& e) {
        if (ptdInReach)
            throw;
        r.warnings.push_back(e.what());
    }
    const Layout layout = t.layout;
    for (SchemeKind kind : ptdInReach ? allSchemes() : std::vector<SchemeKind>{}) {
        SchemeParams p = state.params;
        p.kind = kind;
        p.custom.reset(); // the built-ins beside a scheme file: its bar comes last
        if (componentCount(kind) != componentCount(state.params.kind)) {
            p.allocationKind.reset();
            p.sections.clear();
        }
        if (kind == t.scheme && !state.params.custom) {
            r.ptdBySchemes.push_back({kind, r.ptd.mean, {}});
            continue;
        }
        try {
            r.ptdBySchemes.push_back({kind, schemePtd(layout, p), {}});
        } catch (const InvalidInput& e) {
            // Settings this scheme cannot take (e.g. head_dim 2 for VideoRoPE's allocation): leave its bar out.
            r.warnings.push_back(std::string("PTD chart leaves out ") + schemeName(kind) + ": " + e.what());
        }
    }

    if (ptdInReach && state.params.custom)
        r.ptdBySchemes.push_back({state.params.kind, r.ptd.mean, t.customScheme});

    const int selected = state.selectedToken;
    if (selected >= 0 && selected < t.size() && t.isText(selected)) {
        r.selectedText = selected;
        r.prior = positionalPrior(t, selected);
    }

    if (r.crowding.collisions > 0)
        r.warnings.push_back(std::to_string(r.crowding.collisions) + " visual tokens share a position with another");
    else if (std::isfinite(r.crowding.minPairDistance) && r.crowding.minPairDistance < 0.05)
        r.warnings.push_back("crowded: closest visual tokens are " + std::to_string(r.crowding.minPairDistance).substr(0, 7) +
                             " apart (tokens " + std::to_string(r.crowding.tokenA) + ", " + std::to_string(r.crowding.tokenB) + ")");
    if (state.params.kind == SchemeKind::Circle && state.params.circle.alpha >= 0.999)
        r.warnings.push_back("alpha = 1 maps the extreme angles to 0 and 2pi: tokens collide");
    return r;
}

} // namespace ropescope::session

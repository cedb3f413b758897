#pragma once
#include "core/geometry/metrics.h"
#include "core/session/explorer_state.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::session {

struct SchemePtd {
    geometry::SchemeKind kind;
    double ptd = 0.0;
    std::string custom; // a scheme file's name: its bar (kind is then unused)
};

// Everything the explorer's panels show for one state.
struct Readouts {
    geometry::PositionTable table;
    geometry::PtdResult ptd;             // the shown scheme, per block and per text token
    std::vector<SchemePtd> ptdBySchemes; // every scheme on this layout with the state's parameters
    geometry::Crowding crowding;
    int selectedText = -1;                   // a valid text token, or -1
    std::optional<geometry::PriorMap> prior; // for the selected text token
    std::vector<std::string> warnings;       // collisions, crowding, untrained settings
};

// Computes readouts; remembers other schemes' PTD keyed by layout and their own parameters, so a change
// that only touches Circle-RoPE (alpha, radius) recomputes only Circle-RoPE.
class ReadoutEngine {
public:
    // Throws geometry::InvalidInput (naming the parameter) if the state cannot be drawn.
    Readouts compute(const ExplorerState& state);
    // How many schemes' PTDs were computed, not taken from the cache (tests check what an edit recomputes).
    long long ptdComputations() const { return ptdComputations_; }

private:
    double schemePtd(const geometry::Layout& layout, const geometry::SchemeParams& params);
    // PTD per (layout, scheme parameters), for the by-scheme chart: a linear scan of a few hundred entries.
    struct CachedPtd {
        std::string layout;
        geometry::SchemeParams params;
        double ptd = 0;
    };
    std::vector<CachedPtd> cache_;
    long long ptdComputations_ = 0;
};

} // namespace ropescope::session

#include "core/geometry/age.h"

#include "core/geometry/errors.h"

namespace ropescope::geometry {

std::string AgeSchedule::pattern() const
{
    std::string out;
    for (bool c : usesScheme)
        out += c ? 'C' : 'M';
    return out;
}

AgeSchedule parseAgeSchedule(const std::string& spec, int layers)
{
    if (layers < 1 || layers > 1024)
        throw InvalidInput("age_layers", "must be from 1 to 1024, got " + std::to_string(layers));
    if (spec.size() > static_cast<size_t>(layers) && spec.find_first_not_of("CMcm") == std::string::npos)
        throw InvalidInput("age",
                           "the pattern has " + std::to_string(spec.size()) + " letters but the model has " + std::to_string(layers) +
                               " layers (a shorter pattern repeats; a longer one is refused)");
    AgeSchedule s;
    s.name = spec;
    s.usesScheme.resize(static_cast<size_t>(layers));
    for (int i = 0; i < layers; ++i) {
        bool c = false;
        if (spec == "strategy_1")
            c = true;
        else if (spec == "strategy_2")
            c = 2 * i < layers;
        else if (spec == "strategy_3")
            c = 2 * i >= layers;
        else if (spec == "strategy_4")
            c = i % 2 == 0;
        else {
            if (spec.empty() || spec.find_first_not_of("CMcm") != std::string::npos)
                throw InvalidInput("age", "'" + spec + "' is neither strategy_1..strategy_4 nor a pattern of C (circle) and M (mrope)");
            const char letter = spec[static_cast<size_t>(i) % spec.size()];
            c = letter == 'C' || letter == 'c';
        }
        s.usesScheme[static_cast<size_t>(i)] = c;
    }
    return s;
}

SchemeParams layerParams(const SchemeParams& params, const AgeSchedule& schedule, int layer)
{
    if (layer < 0 || layer >= schedule.layers())
        throw InvalidInput("layer", std::to_string(layer) + " is outside 0.." + std::to_string(schedule.layers() - 1));
    SchemeParams p = params;
    if (!schedule.usesScheme[static_cast<size_t>(layer)]) {
        p.kind = SchemeKind::Mrope;
        if (componentCount(params.kind) != 3) {
            // The scheme's allocation is for another component count; mrope layers use their own.
            p.allocationKind.reset();
            p.sections.clear();
        }
    }
    return p;
}

} // namespace ropescope::geometry

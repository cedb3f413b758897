#include "app/gui/window_words.h"

#include <utility>

namespace ropescope::gui {

QString inWindowWords(const std::string& parameter, const std::string& reason)
{
    static const std::pair<const char*, const char*> labels[] = {
        {"alpha", "alpha"}, {"radius", "R or k"}, {"text_vector", "Text vector"}, {"stride", "Video stride"},
        {"age", "AGE schedule"}, {"age_layers", "AGE layers"}, {"layer", "AGE layer"}, {"theta", "theta"},
        {"head_dim", "head_dim"}, {"sections", "Sections"}, {"allocation", "Allocation"},
        {"second_per_grid", "seconds per grid (spg)"}, {"tokens_per_second", "tokens per second (tps)"},
        {"temporal_stride", "Frame spacing delta"}, {"visual_stride", "V2PE visual stride"},
        {"position_scale", "MM-RoPE scale"}, {"ntk_factor", "VideoRoPE++ NTK factor"}, {"kv_heads", "KV heads"},
        {"partial_rotary", "rotated fraction"}, {"param", "Scheme parameter"}, {"positions", "Position table"},
        {"layout", "layout"}};
    if (parameter.empty())
        return QString::fromStdString(reason);
    QString label = QString::fromStdString(parameter);
    for (const auto& [key, word] : labels)
        if (parameter == key)
            label = word;
    return label + ": " + QString::fromStdString(reason);
}

QString inWindowWords(const geometry::InvalidInput& e)
{
    return inWindowWords(e.parameter(), e.reason());
}

} // namespace ropescope::gui

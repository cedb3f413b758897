#include "app/gui/window_words.h"

#include <utility>

namespace ropescope::gui {

namespace {

const std::pair<const char*, const char*> kLabels[] = {
        {"alpha", "alpha"}, {"radius", "R or k"}, {"text_vector", "Text vector"}, {"stride", "Video stride"},
        {"age", "AGE schedule"}, {"age_layers", "AGE layers"}, {"layer", "AGE layer"}, {"theta", "theta"},
        {"head_dim", "head_dim"}, {"sections", "Sections"}, {"allocation", "Allocation"},
        {"second_per_grid", "seconds per grid (spg)"}, {"tokens_per_second", "tokens per second (tps)"},
        {"temporal_stride", "Frame spacing delta"}, {"visual_stride", "V2PE visual stride"},
        {"position_scale", "MM-RoPE scale"}, {"ntk_factor", "VideoRoPE++ NTK factor"}, {"ntk_alpha", "XD-RoPE NTK alpha"},
        {"newline_column", "XD-RoPE newline column"}, {"kv_heads", "KV heads"},
        {"partial_rotary", "rotated fraction"}, {"param", "Scheme parameter"}, {"positions", "Position table"},
        {"layout", "layout"}, {"selected_token", "selected token"}, {"scheme_file", "scheme file"}, {"camera", "camera"},
        {"colour", "colouring"}, {"highlighted", "highlights"}, {"radius_mode", "radius mode"}, {"video_form", "video form"},
        {"cone_lines", "cone lines"}, {"cone_surface", "cone surface"}, {"attention", "Attention"}};

} // namespace

QString settingWord(const QString& key)
{
    for (const auto& [k, word] : kLabels)
        if (key == k)
            return word;
    return QString(key).replace('_', ' '); // never a JSON spelling in the window's words
}

QString inWindowWords(const std::string& parameter, const std::string& reason)
{
    if (parameter.empty())
        return QString::fromStdString(reason);
    return settingWord(QString::fromStdString(parameter)) + ": " + QString::fromStdString(reason);
}

QString inWindowWords(const geometry::InvalidInput& e)
{
    return inWindowWords(e.parameter(), e.reason());
}

} // namespace ropescope::gui

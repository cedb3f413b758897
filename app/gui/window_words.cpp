#include "app/gui/window_words.h"

#include "core/geometry/scheme_parameters.h"

#include <utility>

namespace ropescope::gui {

namespace {

// The window's words for the settings that are not scheme parameters (those are the parameter table's labels).
const std::pair<const char*, const char*> kLabels[] = {{"age", "AGE schedule"},
                                                       {"age_layers", "AGE layers"},
                                                       {"layer", "AGE layer"},
                                                       {"theta", "theta"},
                                                       {"head_dim", "head_dim"},
                                                       {"sections", "Sections"},
                                                       {"allocation", "Allocation"},
                                                       {"kv_heads", "KV heads"},
                                                       {"partial_rotary", "rotated fraction"},
                                                       {"proportional", "proportional rotary"},
                                                       {"param", "Scheme parameter"},
                                                       {"positions", "Position table"},
                                                       {"layout", "layout"},
                                                       {"selected_token", "selected token"},
                                                       {"scheme_file", "scheme file"},
                                                       {"camera", "camera"},
                                                       {"colour", "colouring"},
                                                       {"highlighted", "highlights"},
                                                       {"video_form", "video form"},
                                                       {"cone_lines", "cone lines"},
                                                       {"cone_surface", "cone surface"},
                                                       {"attention", "Attention"}};

} // namespace

QString settingWord(const QString& key)
{
    if (const geometry::SchemeParameter* row = geometry::findSchemeParameter(key.toStdString()))
        return row->label;
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

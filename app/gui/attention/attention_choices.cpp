#include "app/gui/attention/attention_choices.h"

#include "core/model/analysis/attention_request.h"

#include <array>

namespace ropescope::gui {

namespace {

struct MapTypeName {
    MapType type;
    const char* key;
    const char* label;
};

constexpr std::array<MapTypeName, kMapTypes> kMapTypeNames{{
    {MapType::Attention, "attention", "attention"},
    {MapType::OwnPrior, "own_prior", "model's own positional prior"},
    {MapType::Relevancy, "relevancy", "gradient relevancy of the answer"},
}};

} // namespace

QString mapTypeKey(MapType type)
{
    return kMapTypeNames[static_cast<size_t>(type)].key;
}

QString mapTypeLabel(MapType type)
{
    return kMapTypeNames[static_cast<size_t>(type)].label;
}

MapType mapTypeFromKey(const QString& key)
{
    for (const MapTypeName& n : kMapTypeNames)
        if (key == n.key)
            return n.type;
    return MapType::Attention;
}

QStringList headItems(int heads)
{
    QStringList items{"mean", "max"};
    for (int h = 0; h < heads; ++h)
        items << QString::number(h);
    return items;
}

model::HeadChoice headChoiceAt(int comboIndex)
{
    if (comboIndex <= 0)
        return model::HeadChoice{};
    if (comboIndex == 1)
        return model::HeadChoice{model::HeadChoice::Kind::Max, 0};
    return model::HeadChoice{model::HeadChoice::Kind::Index, comboIndex - kHeadSummaries};
}

int headComboIndex(int head)
{
    return head + kHeadSummaries;
}

} // namespace ropescope::gui

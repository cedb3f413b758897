#pragma once
// The Attention tab's choices, each with one name table: what the combo boxes list, what sessions store.
#include <QString>
#include <QStringList>

namespace ropescope::model {
struct HeadChoice;
}

namespace ropescope::gui {

// What the Map tab draws over the image.
enum class MapType { Attention = 0, OwnPrior = 1, Relevancy = 2 };
constexpr int kMapTypes = 3;
QString mapTypeKey(MapType type);           // the session's word: attention, own_prior, relevancy
QString mapTypeLabel(MapType type);         // the combo box's words
MapType mapTypeFromKey(const QString& key); // unknown: Attention

// The head combo box lists "mean", "max", then every head: these turn its index into a choice and back.
constexpr int kHeadSummaries = 2;
QStringList headItems(int heads);
model::HeadChoice headChoiceAt(int comboIndex);
int headComboIndex(int head);

// The view tabs, in the order they are shown.
enum class AttentionView { Map = 0, LayerHeads = 1, Schemes = 2, Region = 3, Bias = 4, Experts = 5 };

} // namespace ropescope::gui

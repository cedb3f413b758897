#pragma once
#include "core/geometry/scheme.h"
#include "core/model/engine/model_config.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace ropescope::model {

// The scheme a bundled model runs (and was trained) with, as recorded in its config.json "ropescope".
struct ModelScheme {
    geometry::SchemeParams params;
    std::string age; // AGE strategy or pattern; empty for none
};

// A scheme under a name of the user's, e.g. one of the schemes compared side by side.
struct SchemeEntry {
    QString label; // as the user wrote it, e.g. "circle:alpha=0.3"
    ModelScheme scheme;
};

// "circle + AGE strategy_2": the scheme's name, with its AGE schedule when it has one.
QString schemeLabel(const ModelScheme& scheme);

// What RopeScope writes into config.json under "ropescope" and reads back.
QJsonObject schemeToJson(const ModelScheme& scheme);
ModelScheme schemeFromJson(const QJsonObject& json);
// Whether two schemes place a model's tokens the same way: same kind and AGE schedule (strategy names and
// patterns compared as the per-layer pattern for `layers` layers), and Circle-RoPE's parameters where a
// layer uses Circle-RoPE. Decides when a model runs "untrained" and what a comparison compares.
bool sameScheme(const ModelScheme& a, const ModelScheme& b, int layers);
// What differs, in words ("alpha 0.3, trained 0.5"); empty when sameScheme. `a` is the one used, `b` the
// trained one.
std::string schemeDifference(const ModelScheme& a, const ModelScheme& b, int layers);

// The scheme recorded in a model folder's config.json (RopeScope's own models); a Hugging Face checkpoint records
// none and gets `unrecorded` with that scheme's defaults (its family's placement: ownSchemeKind).
ModelScheme recordedScheme(const QString& modelDir, geometry::SchemeKind unrecorded = geometry::SchemeKind::Mrope);
// The "training" record of a model folder (empty if none).
QJsonObject recordedTraining(const QString& modelDir);
// Whether the folder holds a model RopeScope trained on its synthetic shapes task (its record says so).
bool isTaskModel(const QString& modelDir);

} // namespace ropescope::model

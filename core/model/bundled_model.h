#pragma once
#include "core/geometry/scheme.h"
#include "core/model/model_config.h"

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

// The scheme recorded in a model folder's config.json (mrope for Hugging Face checkpoints).
ModelScheme recordedScheme(const QString& modelDir);
// The "training" record of a model folder (empty if none).
QJsonObject recordedTraining(const QString& modelDir);
// Whether the folder holds a model RopeScope trained on its synthetic shapes task (its record says so).
bool isTaskModel(const QString& modelDir);

// A folder in the Hugging Face layout for the synthetic task: config.json (tiny Qwen2-VL), tokenizer.json
// (WordLevel over the task's words and Qwen's special tokens), preprocessor_config.json. Weights are
// written separately (model.safetensors).
void writeTinyModelFiles(const QString& dir, const ModelScheme& scheme, const QJsonObject& training);

// The tiny Qwen2-VL architecture of the bundled models (for training from scratch).
QByteArray tinyConfigJson(const ModelScheme& scheme, const QJsonObject& training);
// The decoder depth of the tiny architecture `train` builds from scratch.
constexpr int kTinyModelLayers = 4;

} // namespace ropescope::model

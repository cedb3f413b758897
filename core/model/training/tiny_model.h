#pragma once
#include "core/model/engine/model_scheme.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace ropescope::model {

// A folder in the Hugging Face layout for the synthetic task: config.json (tiny Qwen2-VL), tokenizer.json
// (WordLevel over the task's words and Qwen's special tokens), preprocessor_config.json. Weights are
// written separately (model.safetensors).
void writeTinyModelFiles(const QString& dir, const ModelScheme& scheme, const QJsonObject& training);

// The tiny Qwen2-VL architecture of the bundled models (for training from scratch).
QByteArray tinyConfigJson(const ModelScheme& scheme, const QJsonObject& training);
// The decoder depth of the tiny architecture `train` builds from scratch.
constexpr int kTinyModelLayers = 4;

} // namespace ropescope::model

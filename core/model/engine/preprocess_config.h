#pragma once
// A model folder's preprocessor_config.json, read without LibTorch (the fuzzer builds it alone).
#include "core/model/engine/model_config.h"

#include <QByteArray>
#include <QString>

#include <array>
#include <cstdint>

namespace ropescope::model {

struct PreprocessOptions {
    int64_t minPixels = 56 * 56;
    // Hub configs allow up to 16384 merged tokens per image; RopeScope caps at 1280 (~1000 tokens of a
    // 2B model's context) unless asked for more, so one photo cannot exhaust memory.
    int64_t maxPixels = 1280LL * 28 * 28;
    // Normalisation per RGB channel (preprocessor_config's image_mean / image_std; CLIP's by default).
    std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};
    std::array<float, 3> stdev{0.26862954f, 0.26130258f, 0.27577711f};
};

// The processor settings of the architecture when a folder has no preprocessor_config.json: Qwen2/2.5-VL's
// (56x56 minimum, CLIP normalisation) or Qwen3-VL's (256x256 minimum, mean = std = 0.5), with RopeScope's
// cap of 1280 merged tokens per image.
PreprocessOptions defaultPreprocessOptions(const ModelConfig& config);

// Reads min_pixels / max_pixels (or size.shortest_edge / longest_edge) and image_mean / image_std from a
// preprocessor_config.json's bytes over the architecture's defaults, keeping the cap: a min_pixels above
// the cap is refused (every image would be enlarged past it). Throws ModelError naming `name` and the key.
PreprocessOptions parsePreprocessConfig(const QByteArray& json, const QString& name, const ModelConfig& config);

// The folder's preprocessor_config.json when present (at most 1 MB), the architecture's defaults otherwise.
PreprocessOptions loadPreprocessOptions(const QString& modelDir, const ModelConfig& config);

} // namespace ropescope::model

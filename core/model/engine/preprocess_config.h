#pragma once
// A model folder's preprocessor_config.json, read without LibTorch (the fuzzer builds it alone).
#include "core/model/engine/model_config.h"

#include <QByteArray>
#include <QString>

#include <array>
#include <cstdint>

namespace ropescope::model {

// Which processor turns an image into patch rows: Qwen2-VL's (and the families that share it: smart_resize, merge
// windows), Gemma 4's (aspect-preserving resize to a soft-token budget, no normalisation, raster patches) or Gemma 3's
// (a fixed image_size square, mean / std 0.5).
enum class ImageProcessorKind { Qwen, Gemma4, Gemma3 };

struct PreprocessOptions {
    ImageProcessorKind kind = ImageProcessorKind::Qwen;
    // Gemma 4: the soft tokens an image (a video frame) may take at most: max_soft_tokens of the image (video)
    // processor, one of 70, 140, 280, 560, 1120; the patch budget is that x pooling_kernel_size^2.
    int maxSoftTokens = 0;
    int maxSoftTokensVideo = 0;
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
// cap of 1280 merged tokens per image; Gemma 4's (max_soft_tokens = the config's vision_soft_tokens_per_image, 70 a
// video frame, pixels in [0, 1]) and Gemma 3's (mean = std = 0.5).
PreprocessOptions defaultPreprocessOptions(const ModelConfig& config);

// Reads min_pixels / max_pixels (or size.shortest_edge / longest_edge) and image_mean / image_std from a
// preprocessor_config.json's bytes over the architecture's defaults, keeping the cap: a min_pixels above
// the cap is refused (every image would be enlarged past it). Gemma: max_soft_tokens (Gemma 4; at the top or under
// image_processor / video_processor), patch_size / pooling_kernel_size / size that must be the model's, image_mean /
// image_std when do_normalize; do_pan_and_scan is refused. Throws ModelError naming `name` and the key.
PreprocessOptions parsePreprocessConfig(const QByteArray& json, const QString& name, const ModelConfig& config);

// The folder's preprocessor_config.json when present (at most 1 MB), the architecture's defaults otherwise.
PreprocessOptions loadPreprocessOptions(const QString& modelDir, const ModelConfig& config);

} // namespace ropescope::model

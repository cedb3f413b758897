#pragma once
#include <array>
#include "model_config.h"

#include <QImage>
#include <QString>

#include <torch/torch.h>

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

struct ProcessedImage {
    torch::Tensor pixels; // [t*h*w, C*T*P*P], the processor's merge-window-major row order
    torch::Tensor grid;   // [1, 3] (t, h, w) in patches
    int resizedWidth = 0, resizedHeight = 0;
    int mergeSize = 2;
    int tokens() const;   // merged tokens = t*h*w / merge^2
};

// Qwen2-VL's image processor: smart_resize to multiples of patch * merge (28) within the pixel bounds
// (Python's round-half-even), bicubic resampling with antialiasing (PIL's BICUBIC), rescale to [0, 1],
// CLIP mean/std normalisation, the frame repeated over the temporal patch, patch flattening.
ProcessedImage preprocessImage(const QImage& image, const VisionConfig& vision, const PreprocessOptions& options = {});

// Loads an image file (any format Qt reads) with limits: at most 100 megapixels and an aspect ratio
// under 200. Throws ModelError naming the file.
QImage loadImage(const QString& path);

// The processor settings of the architecture when a folder has no preprocessor_config.json: Qwen2/2.5-VL's
// (56x56 minimum, CLIP normalisation) or Qwen3-VL's (256x256 minimum, mean = std = 0.5), with RopeScope's
// cap of 1280 merged tokens per image.
PreprocessOptions defaultPreprocessOptions(const ModelConfig& config);

// Reads min_pixels / max_pixels (or size.shortest_edge / longest_edge) and image_mean / image_std from a
// preprocessor_config.json when present (keeping the cap); the architecture's defaults otherwise.
PreprocessOptions loadPreprocessOptions(const QString& modelDir, const ModelConfig& config);

// (h, w) after smart_resize for an image of height x width.
std::pair<int64_t, int64_t> smartResize(int64_t height, int64_t width, int64_t factor, int64_t minPixels, int64_t maxPixels);

} // namespace ropescope::model

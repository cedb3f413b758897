#pragma once
#include "core/model/engine/model_config.h"
#include "core/model/engine/preprocess_config.h"

#include <QImage>
#include <QString>

#include <vector>

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

namespace ropescope::model {

struct ProcessedImage {
    at::Tensor pixels; // [t*h*w, C*T*P*P], the processor's merge-window-major row order
    at::Tensor grid;   // [1, 3] (t, h, w) in patches
    int resizedWidth = 0, resizedHeight = 0;
    int mergeSize = 2;
    int tokens() const; // merged tokens = t*h*w / merge^2
};

// Qwen2-VL's image processor: smart_resize to multiples of patch * merge (28) within the pixel bounds
// (Python's round-half-even), bicubic resampling with antialiasing (PIL's BICUBIC), rescale to [0, 1],
// CLIP mean/std normalisation, the frame repeated over the temporal patch, patch flattening.
ProcessedImage preprocessImage(const QImage& image, const VisionConfig& vision, const PreprocessOptions& options = {});

// Frames of one video, as Qwen2-VL's video processor takes them: every frame resized to the first frame's
// smart_resize size (within the same pixel bounds), normalised like an image, the last frame repeated until
// the count fills whole temporal patches, then the same patch rows: grid (ceil(n / temporal_patch), h, w).
// Throws ModelError for no frames or more than kMaxVideoFrames.
constexpr int kMaxVideoFrames = 256;
ProcessedImage preprocessVideo(const std::vector<QImage>& frames, const VisionConfig& vision, const PreprocessOptions& options = {});

// Loads an image file (any format Qt reads) with limits: at most 100 megapixels and an aspect ratio
// under 200. Throws ModelError naming the file.
QImage loadImage(const QString& path);

// (h, w) after smart_resize for an image of height x width.
std::pair<int64_t, int64_t> smartResize(int64_t height, int64_t width, int64_t factor, int64_t minPixels, int64_t maxPixels);

} // namespace ropescope::model

#pragma once
#include "core/model/engine/model_config.h"
#include "core/model/engine/preprocess_config.h"

#include <QImage>
#include <QString>

#include <vector>

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

namespace ropescope::model {

struct ProcessedImage {
    at::Tensor pixels; // [t*h*w, C*T*P*P], the processor's row order (merge-window-major; raster for Gemma, PaddleOCR-VL)
    at::Tensor grid;   // [1, 3] (t, h, w) in patches
    int resizedWidth = 0, resizedHeight = 0;
    int mergeSize = 2;
    int tokens() const; // merged tokens = t*h*w / merge^2
};

// The image processor of options.kind (defaultPreprocessOptions / loadPreprocessOptions pick the model's):
//  - Qwen2-VL's: smart_resize to multiples of patch * merge (28) within the pixel bounds (Python's
//    round-half-even), bicubic resampling with antialiasing (PIL's BICUBIC), rescale to [0, 1], CLIP mean/std
//    normalisation, the frame repeated over the temporal patch, patch flattening.
//  - Gemma 4's (Gemma4ImageProcessor): resized, keeping the aspect ratio, to the largest size within
//    maxSoftTokens x pooling^2 patches whose sides are multiples of patch * pooling (gemma4ResizedSize; PIL's
//    BICUBIC, no resampling when the size is already that), rescaled to [0, 1] (x / 255 in float32), not
//    normalised; rows in raster order (row by row, x fastest), each patch's pixels (py, px, c); grid (1, h, w).
//  - Gemma 3's (Gemma3ImageProcessor, no pan-and-scan): resized to image_size x image_size (PIL's BILINEAR,
//    antialiased when shrinking), rescaled, normalised by mean / std (0.5); rows in raster order, each patch's
//    pixels (c, py, px) as the patch Conv2d's weight; grid (1, side, side).
ProcessedImage preprocessImage(const QImage& image, const VisionConfig& vision, const PreprocessOptions& options = {});

// Gemma 4's get_aspect_ratio_preserving_size: the (height, width) an image of height x width is resized to for a
// budget of maxPatches patches of `patch` px, sides multiples of pooling * patch. Throws ModelError where
// transformers raises (a size that rounds to 0 x 0).
std::pair<int64_t, int64_t> gemma4ResizedSize(int64_t height, int64_t width, int64_t patch, int64_t maxPatches, int64_t pooling);

// The (h, w) in pixels the processor of options.kind resizes an image (video: its frames) of height x width to.
std::pair<int64_t, int64_t> processedSize(int64_t height, int64_t width, const VisionConfig& vision, const PreprocessOptions& options,
                                          bool video = false);

// Frames of one video, as Qwen2-VL's video processor takes them: every frame resized to the first frame's
// smart_resize size (within the same pixel bounds), normalised like an image, the last frame repeated until
// the count fills whole temporal patches, then the same patch rows: grid (ceil(n / temporal_patch), h, w).
// Gemma 4 (Gemma4VideoProcessor): every frame resized to the first frame's size for maxSoftTokensVideo, rows as
// an image's, frame after frame: grid (n, h, w). Gemma 3 takes no video (ModelError).
// Throws ModelError for no frames or more than kMaxVideoFrames.
constexpr int kMaxVideoFrames = 256;
ProcessedImage preprocessVideo(const std::vector<QImage>& frames, const VisionConfig& vision, const PreprocessOptions& options = {});

// Loads an image file (any format Qt reads) with limits: at most 100 megapixels and an aspect ratio
// under 200. Throws ModelError naming the file.
QImage loadImage(const QString& path);

// (h, w) after smart_resize for an image of height x width.
std::pair<int64_t, int64_t> smartResize(int64_t height, int64_t width, int64_t factor, int64_t minPixels, int64_t maxPixels);

} // namespace ropescope::model

#pragma once
// A processor's outputs under transformers' names (a fixture's inputs*.safetensors, `ropescope forward --inputs`)
// turned into what the vision tower takes: patch rows [N, C*T*P*P] and a (t, h, w) grid per image or video.
// Qwen's, GLM-V's and PaddleOCR-VL's processors already hand rows and grids; Gemma's do not:
//  - Gemma 4: pixel_values [n, P, 3*p*p] padded to the processor's patch budget P, with image_position_ids
//    [n, P, 2] ((x, y) per patch, padding (-1, -1)); videos [v, F, P, 3*p*p] with video_position_ids [v, F, P, 2].
//    Rows: each image's valid patches, in the processor's raster order (row by row, x fastest), each patch as
//    the processor flattens it ((py, px, c), values in [0, 1]); grid (1, rows, cols), a video (F, rows, cols).
//  - Gemma 3: pixel_values [n, C, S, S] (normalised images). Rows: the (S/p)^2 patches in raster order, each
//    patch's pixels in (c, py, px) order (the patch Conv2d weight's layout); grid (1, S/p, S/p).
#include "core/model/engine/model_config.h"
#include "core/model/engine/safetensors.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <string>

namespace ropescope::model {

struct ForwardRequest;

struct PatchRows {
    at::Tensor pixels; // [N, C*T*P*P] float32
    at::Tensor grid;   // [images or videos, 3] int64
};

// Gemma 4 images: the valid rows of each image and its grid. The positions must be a whole raster grid of the
// image's patches, inside the position table (vision_config.position_embedding_size); padding (-1, -1) anywhere
// after. Throws BadRequest naming `positionsName` (or `pixelsName`) and the image.
PatchRows gemma4PatchRows(const at::Tensor& pixelValues, const at::Tensor& positionIds, const VisionConfig& vision,
                          const std::string& pixelsName = "pixel_values", const std::string& positionsName = "image_position_ids");
// Gemma 4 videos [v, F, P, d] with [v, F, P, 2]: every frame's valid rows, frame after frame; one (F, h, w) grid a
// video (its frames must share one patch grid, as the video processor makes them).
PatchRows gemma4VideoRows(const at::Tensor& pixelValues, const at::Tensor& positionIds, const VisionConfig& vision);
// Gemma 3 images [n, C, S, S] (S = vision_config.image_size).
PatchRows gemma3PatchRows(const at::Tensor& pixelValues, const VisionConfig& vision);

// The request's pixels and grids (and mm_token_type_ids) from a file of processor outputs, in each family's form:
// pixel_values + image_grid_thw and pixel_values_videos + video_grid_thw as they are, or Gemma's forms above
// (chosen by image_position_ids / video_position_ids for Gemma 4, by a 4-D pixel_values without image_grid_thw
// for Gemma 3). Throws BadRequest for a form the model does not take.
void readProcessorInputs(const SafeTensors& inputs, const ModelConfig& config, ForwardRequest& req);

} // namespace ropescope::model

#include "core/model/engine/processor_inputs.h"

#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

namespace ropescope::model {
namespace {

std::string shapeOf(const torch::Tensor& t)
{
    std::string out = "[";
    for (int64_t i = 0; i < t.dim(); ++i)
        out += (i ? ", " : "") + std::to_string(t.size(i));
    return out + "]";
}

// One image's (or frame's) rows [P, d] and positions [P, 2]: its valid rows and its (h, w) in patches.
std::pair<torch::Tensor, std::pair<int64_t, int64_t>> validPatches(const torch::Tensor& rows, const torch::Tensor& positions,
                                                                   const VisionConfig& v, const std::string& where)
{
    const auto x = positions.select(1, 0), y = positions.select(1, 1);
    const auto padding = (x == -1) & (y == -1);
    const auto valid = padding.logical_not();
    if (((x < 0) & valid).any().item<bool>() || ((y < 0) & valid).any().item<bool>())
        throw BadRequest(where + " has a negative position other than the padding (-1, -1)");
    const int64_t count = valid.sum().item<int64_t>();
    if (count == 0)
        throw BadRequest(where + " has no valid patch (every position is the padding (-1, -1))");
    const auto vx = x.masked_select(valid), vy = y.masked_select(valid);
    const int64_t maxX = vx.max().item<int64_t>(), maxY = vy.max().item<int64_t>();
    if (std::max(maxX, maxY) >= v.positionTableSide)
        throw BadRequest(where + " has a patch at (x, y) = (" + std::to_string(maxX) + ", " + std::to_string(maxY) +
                         "), outside the position table's " + std::to_string(v.positionTableSide) +
                         " positions an axis (vision_config.position_embedding_size)");
    const int64_t w = maxX + 1, h = count / w;
    const auto index = torch::arange(count, torch::kInt64);
    if (count % w != 0 || !torch::equal(vx, index.remainder(w)) || !torch::equal(vy, index.div(w, "floor")))
        throw BadRequest(where +
                         ": the valid patches are not a whole raster grid (row by row, x fastest) as Gemma 4's processor makes them");
    return {rows.index({valid}), {h, w}};
}

// [items, P, d] and [items, P, 2], checked against each other and the tower.
void checkGemma4Shapes(const torch::Tensor& pixels, const torch::Tensor& positions, const VisionConfig& v, const std::string& pixelsName,
                       const std::string& positionsName, int64_t dims)
{
    if (pixels.dim() != dims || positions.dim() != dims || positions.size(-1) != 2 || pixels.size(-1) != v.patchDim() ||
        pixels.sizes().slice(0, dims - 1) != positions.sizes().slice(0, dims - 1))
        throw BadRequest(pixelsName + " " + shapeOf(pixels) + " and " + positionsName + " " + shapeOf(positions) + ": expected [" +
                         (dims == 4 ? "videos, frames, " : "images, ") + "patches, " + std::to_string(v.patchDim()) + "] and [" +
                         (dims == 4 ? "videos, frames, " : "images, ") + "patches, 2]");
    if (!torch::isIntegralType(positions.scalar_type(), false))
        throw BadRequest(positionsName + ": expected whole numbers, got " + std::string(c10::toString(positions.scalar_type())));
}

} // namespace

PatchRows gemma4PatchRows(const torch::Tensor& pixelValues, const torch::Tensor& positionIds, const VisionConfig& v,
                          const std::string& pixelsName, const std::string& positionsName)
{
    checkGemma4Shapes(pixelValues, positionIds, v, pixelsName, positionsName, 3);
    const auto pixels = pixelValues.to(torch::kCPU, torch::kFloat32), positions = positionIds.to(torch::kCPU, torch::kInt64);
    std::vector<torch::Tensor> rows, grids;
    for (int64_t i = 0; i < pixels.size(0); ++i) {
        const auto [valid, hw] = validPatches(pixels[i], positions[i], v, positionsName + ": image " + std::to_string(i));
        rows.push_back(valid);
        grids.push_back(torch::tensor({int64_t(1), hw.first, hw.second}, torch::kInt64));
    }
    return {torch::cat(rows).contiguous(), torch::stack(grids)};
}

PatchRows gemma4VideoRows(const torch::Tensor& pixelValues, const torch::Tensor& positionIds, const VisionConfig& v)
{
    const std::string pixelsName = "pixel_values_videos", positionsName = "video_position_ids";
    checkGemma4Shapes(pixelValues, positionIds, v, pixelsName, positionsName, 4);
    const auto pixels = pixelValues.to(torch::kCPU, torch::kFloat32), positions = positionIds.to(torch::kCPU, torch::kInt64);
    std::vector<torch::Tensor> rows, grids;
    for (int64_t i = 0; i < pixels.size(0); ++i) {
        std::pair<int64_t, int64_t> first{0, 0};
        for (int64_t f = 0; f < pixels.size(1); ++f) {
            const std::string where = positionsName + ": video " + std::to_string(i) + " frame " + std::to_string(f);
            const auto [valid, hw] = validPatches(pixels[i][f], positions[i][f], v, where);
            if (f > 0 && hw != first)
                throw BadRequest(where + " is " + std::to_string(hw.first) + " x " + std::to_string(hw.second) + " patches, frame 0 " +
                                 std::to_string(first.first) + " x " + std::to_string(first.second) + ": a video's frames share one grid");
            first = hw;
            rows.push_back(valid);
        }
        grids.push_back(torch::tensor({pixels.size(1), first.first, first.second}, torch::kInt64));
    }
    return {torch::cat(rows).contiguous(), torch::stack(grids)};
}

PatchRows gemma3PatchRows(const torch::Tensor& pixelValues, const VisionConfig& v)
{
    const int64_t c = v.inChannels, s = v.imageSize, p = v.patchSize, side = s / p;
    if (pixelValues.dim() != 4 || pixelValues.size(1) != c || pixelValues.size(2) != s || pixelValues.size(3) != s ||
        pixelValues.size(0) < 1)
        throw BadRequest("pixel_values " + shapeOf(pixelValues) + ": Gemma 3 takes images [n, " + std::to_string(c) + ", " +
                         std::to_string(s) + ", " + std::to_string(s) + "] (vision_config.image_size)");
    const int64_t n = pixelValues.size(0);
    const auto rows = pixelValues.to(torch::kCPU, torch::kFloat32)
                          .reshape({n, c, side, p, side, p})
                          .permute({0, 2, 4, 1, 3, 5})
                          .reshape({n * side * side, c * p * p})
                          .contiguous();
    return {rows, torch::tensor({int64_t(1), side, side}, torch::kInt64).repeat({n, 1})};
}

void readProcessorInputs(const SafeTensors& inputs, const ModelConfig& config, ForwardRequest& req)
{
    const VisionConfig& v = config.vision;
    const bool gemma4 = config.architecture == Architecture::Gemma4, gemma3 = config.architecture == Architecture::Gemma3;
    for (const char* name : {"image_position_ids", "video_position_ids"})
        if (inputs.find(name) && !gemma4)
            throw BadRequest(std::string(name) + " is Gemma 4's; " + architectureName(config.architecture) + " takes image_grid_thw");
    if (inputs.find("mm_token_type_ids")) // GLM-V's and Gemma 4's image / video pad types (the processor's name)
        req.tokenTypes = toTorch(inputs, "mm_token_type_ids").flatten();
    if (inputs.find("pixel_values")) {
        const auto pixels = toTorch(inputs, "pixel_values");
        if (gemma4 && inputs.find("image_position_ids")) {
            const PatchRows rows = gemma4PatchRows(pixels, toTorch(inputs, "image_position_ids"), v);
            req.pixelValues = rows.pixels;
            req.imageGridThw = rows.grid;
        } else if (gemma3 && !inputs.find("image_grid_thw")) {
            const PatchRows rows = gemma3PatchRows(pixels, v);
            req.pixelValues = rows.pixels;
            req.imageGridThw = rows.grid;
        } else if (!inputs.find("image_grid_thw")) {
            throw BadRequest(std::string("pixel_values is given without ") + (gemma4 ? "image_position_ids or " : "") + "image_grid_thw");
        } else {
            req.pixelValues = pixels;
            req.imageGridThw = toTorch(inputs, "image_grid_thw");
        }
    }
    if (inputs.find("pixel_values_videos")) {
        const auto pixels = toTorch(inputs, "pixel_values_videos");
        if (gemma4 && inputs.find("video_position_ids")) {
            const PatchRows rows = gemma4VideoRows(pixels, toTorch(inputs, "video_position_ids"), v);
            req.videoPixelValues = rows.pixels;
            req.videoGridThw = rows.grid;
        } else if (!inputs.find("video_grid_thw")) {
            throw BadRequest(std::string("pixel_values_videos is given without ") + (gemma4 ? "video_position_ids or " : "") +
                             "video_grid_thw");
        } else {
            req.videoPixelValues = pixels;
            req.videoGridThw = toTorch(inputs, "video_grid_thw");
        }
    }
}

} // namespace ropescope::model

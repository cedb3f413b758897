#include "core/positions/token_layout.h"

#include "core/geometry/errors.h"

#include <string>

namespace ropescope::positions {

using geometry::InvalidInput;

geometry::Layout layoutFromTokens(const std::vector<int64_t>& ids, const std::vector<Grid>& imageGrids,
                                  const std::vector<Grid>& givenVideoGrids, const TokenRule& rule)
{
    // Qwen3-VL writes a video as one (1, h, w) grid per temporal patch, each wrapped in its own
    // <|vision_start|> ... <|vision_end|> after a "<t seconds>" timestamp: every frame is its own run.
    std::vector<Grid> videoGrids;
    for (Grid g : givenVideoGrids) {
        if (rule.temporalMerge > 1) { // ERNIE: floor(frames / 2) temporal patches, as its get_rope_index takes them
            if (g[0] < rule.temporalMerge)
                throw InvalidInput("video_grid_thw: t = " + std::to_string(g[0]) + " frames, fewer than one temporal patch (" +
                                   std::to_string(rule.temporalMerge) + " frames)");
            g[0] /= rule.temporalMerge;
        }
        if (rule.splitVideoFrames && g[0] > 1 && static_cast<size_t>(g[0]) <= ids.size())
            videoGrids.insert(videoGrids.end(), static_cast<size_t>(g[0]), Grid{1, g[1], g[2]});
        else
            videoGrids.push_back(g);
    }
    geometry::Layout layout;
    const int64_t m = rule.mergeSize;
    size_t image = 0, video = 0;
    int text = 0;
    auto flushText = [&] {
        if (text > 0)
            layout.segments.push_back({geometry::SegmentKind::Text, text, 1, 0, 0});
        text = 0;
    };
    for (size_t i = 0; i < ids.size();) {
        const bool isImage = ids[i] == rule.imageToken, isVideo = ids[i] == rule.videoToken;
        if (!isImage && !isVideo) {
            ++text;
            ++i;
            continue;
        }
        const auto& grids = isImage ? imageGrids : videoGrids;
        size_t& next = isImage ? image : video;
        const char* what = isImage ? "image" : "video";
        if (next >= grids.size())
            throw InvalidInput(std::string("input_ids: more ") + what + " token runs than " + what + "_grid_thw rows");
        const Grid g = grids[next++];
        if (m < 1 || g[0] < 1 || g[1] < 1 || g[2] < 1 || g[1] % m || g[2] % m)
            throw InvalidInput(std::string(what) + "_grid_thw: (t, h, w) must be positive with h, w divisible by " + std::to_string(m));
        // Each factor is bounded by the sequence before they are multiplied, so the product cannot overflow.
        const int64_t rows = g[1] / m, cols = g[2] / m, room = static_cast<int64_t>(ids.size() - i);
        if (g[0] > room || rows > room || cols > room || g[0] * rows > room || g[0] * rows * cols > room)
            throw InvalidInput(std::string("input_ids: ") + what + " " + std::to_string(next - 1) + " grid (" + std::to_string(g[0]) + "," +
                               std::to_string(g[1]) + "," + std::to_string(g[2]) + ") needs more tokens than input_ids has left");
        // XD-RoPE: one extra token, the rows with their newline tokens, and one more (the processor's h (w + 1) + 2).
        if (rule.xdSpans && g[0] != 1)
            throw InvalidInput(std::string(what) + "_grid_thw row " + std::to_string(next - 1) + ": t = " + std::to_string(g[0]) +
                               ", but an XD-RoPE span holds one frame");
        if (rule.xdSpans && rows * (cols + 1) + 2 > room)
            throw InvalidInput(std::string("input_ids: ") + what + " " + std::to_string(next - 1) + " grid (" + std::to_string(g[0]) + "," +
                               std::to_string(g[1]) + "," + std::to_string(g[2]) + ") needs more tokens than input_ids has left");
        const int64_t count = rule.xdSpans ? rows * (cols + 1) + 2 : g[0] * rows * cols;
        for (int64_t k = 0; k < count; ++k)
            if (i + static_cast<size_t>(k) >= ids.size() || ids[i + static_cast<size_t>(k)] != ids[i])
                throw InvalidInput(std::string("input_ids: ") + what + " " + std::to_string(next - 1) + " needs " + std::to_string(count) +
                                   " tokens for grid (" + std::to_string(g[0]) + "," + std::to_string(g[1]) + "," + std::to_string(g[2]) +
                                   ")");
        if (i + static_cast<size_t>(count) < ids.size() && ids[i + static_cast<size_t>(count)] == ids[i])
            throw InvalidInput(std::string("input_ids: ") + what + " " + std::to_string(next - 1) + " has more tokens than its grid (" +
                               std::to_string(g[0]) + "," + std::to_string(g[1]) + "," + std::to_string(g[2]) + ") places (" +
                               std::to_string(count) + ")");
        flushText();
        geometry::Segment s;
        s.kind = isImage && g[0] == 1 ? geometry::SegmentKind::Image : geometry::SegmentKind::Video;
        s.frames = static_cast<int>(g[0]);
        s.rows = static_cast<int>(rows);
        s.cols = static_cast<int>(cols);
        layout.segments.push_back(s);
        i += static_cast<size_t>(count);
    }
    flushText();
    if (image != imageGrids.size() || video != videoGrids.size())
        throw InvalidInput("image_grid_thw / video_grid_thw: more grids than image / video token runs in input_ids");
    return layout;
}

geometry::Layout sequentialLayout(const std::vector<int64_t>& ids, int64_t imageToken, int64_t videoToken)
{
    geometry::Layout layout;
    for (size_t i = 0; i < ids.size();) {
        size_t end = i + 1;
        while (end < ids.size() && ids[end] == ids[i])
            ++end;
        const bool image = imageToken >= 0 && ids[i] == imageToken, video = videoToken >= 0 && ids[i] == videoToken;
        const int run = static_cast<int>(end - i);
        if (image || video) {
            geometry::Segment s;
            s.kind = image ? geometry::SegmentKind::Image : geometry::SegmentKind::Video;
            s.rows = 1;
            s.cols = run;
            layout.segments.push_back(s);
        } else if (!layout.segments.empty() && layout.segments.back().kind == geometry::SegmentKind::Text) {
            layout.segments.back().length += run;
        } else {
            layout.segments.push_back({geometry::SegmentKind::Text, run, 1, 0, 0});
        }
        i = end;
    }
    return layout;
}

} // namespace ropescope::positions

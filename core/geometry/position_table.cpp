#include "core/geometry/position_table.h"

#include <algorithm>

namespace ropescope::geometry {

const char* modalityName(Modality m)
{
    switch (m) {
    case Modality::Text: return "text";
    case Modality::Image: return "image";
    case Modality::Video: return "video";
    }
    return "?";
}

PositionTable tokenMetadata(const Layout& layout)
{
    // Sized once and written by index: this runs for every sample of every batch rope_index places.
    PositionTable table;
    table.layout = layout;
    const auto n = static_cast<size_t>(layout.tokenCount());
    table.modality.resize(n);
    table.segment.resize(n);
    table.frame.resize(n);
    table.row.resize(n);
    table.col.resize(n);
    size_t text = 0;
    for (const Segment& seg : layout.segments)
        text += seg.kind == SegmentKind::Text ? static_cast<size_t>(seg.length) : 0;
    table.textTokens.reserve(text);

    size_t token = 0;
    for (size_t s = 0; s < layout.segments.size(); ++s) {
        const Segment& seg = layout.segments[s];
        const int segIndex = static_cast<int>(s);
        if (seg.kind == SegmentKind::Text) {
            const auto end = token + static_cast<size_t>(seg.length);
            std::fill(table.modality.begin() + static_cast<std::ptrdiff_t>(token),
                      table.modality.begin() + static_cast<std::ptrdiff_t>(end), Modality::Text);
            std::fill(table.segment.begin() + static_cast<std::ptrdiff_t>(token), table.segment.begin() + static_cast<std::ptrdiff_t>(end),
                      segIndex);
            for (auto* v : {&table.frame, &table.row, &table.col})
                std::fill(v->begin() + static_cast<std::ptrdiff_t>(token), v->begin() + static_cast<std::ptrdiff_t>(end), -1);
            for (; token < end; ++token)
                table.textTokens.push_back(static_cast<int>(token));
            continue;
        }
        const Modality m = seg.kind == SegmentKind::Image ? Modality::Image : Modality::Video;
        for (int t = 0; t < seg.frames; ++t) {
            table.blocks.push_back({segIndex, t, static_cast<int>(token), seg.rows, seg.cols});
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c, ++token) {
                    table.modality[token] = m;
                    table.segment[token] = segIndex;
                    table.frame[token] = t;
                    table.row[token] = r;
                    table.col[token] = c;
                }
        }
    }
    return table;
}

} // namespace ropescope::geometry

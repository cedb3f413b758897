#include "core/geometry/position_table.h"

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
    PositionTable table;
    table.layout = layout;
    const auto n = static_cast<size_t>(layout.tokenCount());
    table.modality.reserve(n);
    table.segment.reserve(n);
    table.frame.reserve(n);
    table.row.reserve(n);
    table.col.reserve(n);

    int token = 0;
    for (size_t s = 0; s < layout.segments.size(); ++s) {
        const Segment& seg = layout.segments[s];
        const int segIndex = static_cast<int>(s);
        if (seg.kind == SegmentKind::Text) {
            for (int i = 0; i < seg.length; ++i) {
                table.textTokens.push_back(token++);
                table.modality.push_back(Modality::Text);
                table.segment.push_back(segIndex);
                table.frame.push_back(-1);
                table.row.push_back(-1);
                table.col.push_back(-1);
            }
            continue;
        }
        const Modality m = seg.kind == SegmentKind::Image ? Modality::Image : Modality::Video;
        for (int t = 0; t < seg.frames; ++t) {
            table.blocks.push_back({segIndex, t, token, seg.rows, seg.cols});
            for (int r = 0; r < seg.rows; ++r)
                for (int c = 0; c < seg.cols; ++c) {
                    ++token;
                    table.modality.push_back(m);
                    table.segment.push_back(segIndex);
                    table.frame.push_back(t);
                    table.row.push_back(r);
                    table.col.push_back(c);
                }
        }
    }
    return table;
}

} // namespace ropescope::geometry

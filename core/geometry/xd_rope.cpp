// XD-RoPE as HunyuanVL's code builds position_ids (vLLM's HunYuanVLForConditionalGeneration.
// get_xdrope_input_positions and the HunYuanVL processor; tests/data/xdrope/make_reference.py re-expresses it):
// four rows [p, w, h, t], all equal to the token's index except on an image's grid, where w is the column
// (0..W, W being the row's newline token), h the row, and t the image's number in the sequence (0, 1, ...).
// p is never touched, so text after an image is never compressed. The span is
// begin, H rows of W + 1 tokens, end (the processor's h * (w + 1) + 2 image tokens); begin and end keep the
// index on every axis, as text does, and RopeScope counts them as text (they have no grid coordinate).
#include "core/geometry/xd_rope.h"

namespace ropescope::geometry {
namespace {

struct Builder {
    PositionTable& t;
    std::vector<Eigen::Vector4d> rows; // (p, w, h, t) per token
    int token = 0;

    // A token placed as text: the index on every axis.
    void textToken(int segment)
    {
        t.textTokens.push_back(token);
        t.modality.push_back(Modality::Text);
        t.segment.push_back(segment);
        t.frame.push_back(-1);
        t.row.push_back(-1);
        t.col.push_back(-1);
        rows.push_back(Eigen::Vector4d::Constant(token));
        ++token;
    }

    // One frame's grid: rows x cols tokens, row-major, at time index `time`.
    void grid(int segment, int frame, Modality m, int gridRows, int gridCols, double time)
    {
        t.blocks.push_back({segment, frame, token, gridRows, gridCols});
        for (int r = 0; r < gridRows; ++r)
            for (int c = 0; c < gridCols; ++c, ++token) {
                t.modality.push_back(m);
                t.segment.push_back(segment);
                t.frame.push_back(frame);
                t.row.push_back(r);
                t.col.push_back(c);
                rows.emplace_back(token, c, r, time);
            }
    }
};

} // namespace

PositionTable xdRopeTable(const Layout& layout, bool newlineColumn, bool splitFrames)
{
    PositionTable table;
    table.layout = layout;
    Builder b{table, {}, 0};
    int spans = 0; // images and frames placed so far: the t of the next one
    for (size_t s = 0; s < layout.segments.size(); ++s) {
        const Segment& seg = layout.segments[s];
        const int segment = static_cast<int>(s);
        if (!seg.isVisual()) {
            for (int i = 0; i < seg.length; ++i)
                b.textToken(segment);
            continue;
        }
        const Modality m = seg.kind == SegmentKind::Image ? Modality::Image : Modality::Video;
        const int cols = seg.cols + (newlineColumn ? 1 : 0);
        for (int f = 0; f < seg.frames; ++f) {
            const bool opens = splitFrames || f == 0, closes = splitFrames || f == seg.frames - 1;
            if (newlineColumn && opens)
                b.textToken(segment);
            b.grid(segment, f, m, seg.rows, cols, spans + (splitFrames ? 0 : f));
            if (newlineColumn && closes)
                b.textToken(segment);
            if (splitFrames)
                ++spans;
        }
        if (!splitFrames)
            spans += seg.frames;
    }
    table.positions.resize(static_cast<Eigen::Index>(b.rows.size()), 4);
    for (size_t i = 0; i < b.rows.size(); ++i)
        table.positions.row(static_cast<Eigen::Index>(i)) = b.rows[i].transpose();
    return table;
}

} // namespace ropescope::geometry

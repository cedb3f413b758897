#pragma once
#include <string>
#include <vector>

namespace ropescope::geometry {

enum class SegmentKind { Text, Image, Video };

// One segment of a sequence layout: `text:N`, `image:HxW` or `video:TxHxW` (merged token grid).
struct Segment {
    SegmentKind kind = SegmentKind::Text;
    int length = 0; // text tokens
    int frames = 1; // visual segments
    int rows = 0;
    int cols = 0;

    long long tokenCount() const;
    bool isVisual() const { return kind != SegmentKind::Text; }
    std::string toString() const;
};

struct Layout {
    std::vector<Segment> segments;

    long long tokenCount() const;
    std::string toString() const;
};

// Largest sequence a layout may describe. Large enough for sixteen 64x64 images among 8k text tokens
// (and far beyond any real VLM context); small enough that every table and metric stays in memory.
constexpr long long kMaxLayoutTokens = 1LL << 20;
// Most segments a layout may have: far beyond any prompt (a few dozen images or frames), small enough that
// per-segment work (PTD per block, the charts of all schemes) stays interactive.
constexpr int kMaxLayoutSegments = 4096;

// Parses e.g. "text:4,image:3x3,text:5". Throws InvalidInput naming the segment and the problem.
Layout parseLayout(const std::string& spec);

} // namespace ropescope::geometry

#include "core/positions/position_check.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace ropescope::positions {
namespace {

// "video 1" of "video 1 frame 3": the video a segment name belongs to.
std::string videoOf(const std::string& segment)
{
    const size_t first = segment.find(' ');
    const size_t second = first == std::string::npos ? std::string::npos : segment.find(' ', first + 1);
    return segment.substr(0, second);
}

// Segment names per attended token: text, image k, video k frame f (k the video_grid_thw row). Named through the
// table's own per-token segment, since XD-RoPE's table holds more tokens than its layout names (the newline
// column and each span's begin and end); a span's begin and end are text, as they carry no grid coordinate.
std::vector<std::string> segmentNames(const SamplePositions& s, bool splitVideos)
{
    std::vector<std::string> bySegment;
    bySegment.reserve(s.table.layout.segments.size());
    int imageIndex = 0;
    int64_t frameOfVideo = 0;
    size_t videoIndex = 0;
    for (const geometry::Segment& seg : s.table.layout.segments) {
        if (seg.kind == geometry::SegmentKind::Text) {
            bySegment.push_back("text");
        } else if (seg.kind == geometry::SegmentKind::Image) {
            bySegment.push_back("image " + std::to_string(imageIndex++));
        } else {
            const size_t row = videoIndex < s.videoRows.size() ? s.videoRows[videoIndex] : 0;
            if (splitVideos) {
                bySegment.push_back("video " + std::to_string(row) + " frame " + std::to_string(frameOfVideo));
                if (videoIndex < s.videos.size() && ++frameOfVideo >= s.videos[videoIndex][0]) {
                    frameOfVideo = 0;
                    ++videoIndex;
                }
            } else {
                bySegment.push_back("video " + std::to_string(row));
                ++videoIndex;
            }
        }
    }
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(s.table.size()));
    for (int k = 0; k < s.table.size(); ++k) {
        const auto seg = static_cast<size_t>(s.table.segment[static_cast<size_t>(k)]);
        names.push_back(s.table.isText(k) || seg >= bySegment.size() ? "text" : bySegment[seg]);
    }
    return names;
}

// A sequential family's names per attended token, read from the ids: image k, video frame k (Gemma 4 writes each
// frame as its own run), audio k, the boi and eoi around a run ("boi of image 0"), and text.
std::vector<std::string> sequentialNames(const SamplePositions& s, const FamilyRule& rule)
{
    const std::vector<int64_t>& ids = s.ids;
    std::vector<std::string> names(ids.size(), "text");
    std::vector<char> soft(ids.size(), 0);
    int images = 0, frames = 0, audios = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t id = ids[i];
        const bool starts = i == 0 || ids[i - 1] != id;
        int* count = id < 0         ? nullptr
            : id == rule.imageToken ? &images
            : id == rule.videoToken ? &frames
            : id == rule.audioToken ? &audios
                                    : nullptr;
        if (!count)
            continue;
        *count += starts;
        soft[i] = 1;
        names[i] = (count == &images ? "image " : count == &frames ? "video frame " : "audio ") + std::to_string(*count - 1);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= 0 && ids[i] == rule.boiToken && i + 1 < ids.size() && soft[i + 1])
            names[i] = "boi of " + names[i + 1];
        else if (ids[i] >= 0 && ids[i] == rule.eoiToken && i > 0 && soft[i - 1])
            names[i] = "eoi of " + names[i - 1];
    }
    return names;
}

} // namespace

const char* faultKindName(FaultKind kind)
{
    switch (kind) {
    case FaultKind::None: return "none";
    case FaultKind::OneD: return "1-d";
    case FaultKind::Temporal: return "temporal";
    case FaultKind::Offset: return "offset";
    case FaultKind::RopeDeltas: return "rope-deltas";
    case FaultKind::Other: return "other";
    }
    return "?";
}

const char* faultKindWords(FaultKind kind)
{
    switch (kind) {
    case FaultKind::None: return "matches the family's rule";
    case FaultKind::OneD: return "1-D positions: t, h and w are equal everywhere, so images get no 2-D (3-D) positions";
    case FaultKind::Temporal: return "temporal ids: a video's t is wrong (constant within the video, or stepping by the wrong interval)";
    case FaultKind::Offset: return "every position is off by the same amount: padding counted into the positions (a left-padded batch?)";
    case FaultKind::RopeDeltas: return "the positions match but rope_deltas does not (max position + 1 - sequence length)";
    case FaultKind::Other: return "the positions differ from the family's rule";
    }
    return "?";
}

namespace {

// position_ids [3 or 4, B, L] (XD-RoPE: [4, B, L]; the sequential families: [B, L] or [1, B, L]) and rope_deltas one
// per sample, against input_ids' B and L.
void checkPositionShapes(const Batch& batch, const IntView& pos, const IntView& deltas, int components)
{
    if (!pos.given)
        batch.bad("no 'position_ids'");
    const IntView& ids = batch.inputIds;
    if (ids.given && ids.shape.size() == 2) { // input_ids' own shape is forEachSample's to check
        const int64_t rows = ids.shape[0], length = ids.shape[1];
        const std::vector<int64_t>& p = pos.shape;
        const bool fits = components == 1
            ? p == std::vector<int64_t>{rows, length} || p == std::vector<int64_t>{1, rows, length}
            : p.size() == 3 && p[1] == rows && p[2] == length && (components == 4 ? p[0] == 4 : p[0] == 3 || p[0] == 4);
        if (!fits)
            batch.bad(std::string("'position_ids' must be ") +
                      (components == 1       ? "[B, L] (one position per token)"
                           : components == 4 ? "[4, B, L] (p, w, h, t)"
                                             : "[3, B, L] or [4, B, L]") +
                      " with input_ids' B = " + std::to_string(rows) + " and L = " + std::to_string(length));
        if (deltas.given && deltas.numel() != rows)
            batch.bad("'rope_deltas' must hold one whole number per sample ([B, 1])");
    }
}

// What a sample's comparison saw besides its first difference: the clues that name the fault.
struct AxisComparison {
    bool sameEverywhere = true; // every token got the same value on every axis
    bool expectedSame = true;   // and the rule gives it the same on every axis too
    std::set<int64_t> offsets;  // got - expected, over every token and axis
    int64_t maxExpected = 0;
};

// Fills c's positions (got and expected, axis by axis), its first difference and its count of differing tokens.
// axisBase: 1 where a 3-row family's table is [4, B, L] (row 0 the text position, then t, h, w).
AxisComparison compareAxes(const IntView& pos, int64_t rows, int64_t length, int axisBase, int components, const SamplePositions& s,
                           SampleCheck& c)
{
    const int64_t n = c.tokens, b = s.row;
    c.gotPositions.resize(static_cast<size_t>(components * n));
    c.expectedPositions.resize(static_cast<size_t>(components * n));
    AxisComparison cmp;
    for (int64_t k = 0; k < n; ++k) {
        bool differs = false;
        for (int a = 0; a < components; ++a) {
            const int64_t got = pos[((axisBase + a) * rows + b) * length + s.where[static_cast<size_t>(k)]];
            const auto expected = wholePosition(s.table.positions(k, a));
            c.gotPositions[static_cast<size_t>(a * n + k)] = got;
            c.expectedPositions[static_cast<size_t>(a * n + k)] = expected;
            cmp.maxExpected = std::max(cmp.maxExpected, expected);
            cmp.offsets.insert(got - expected);
            if (got != expected) {
                differs = true;
                if (c.firstToken < 0) {
                    c.firstToken = s.where[static_cast<size_t>(k)];
                    c.axis = a;
                    c.got = got;
                    c.expected = expected;
                    c.segment = c.segments[static_cast<size_t>(k)];
                }
            }
        }
        c.differing += differs;
        for (int a = 1; a < components; ++a) {
            cmp.sameEverywhere =
                cmp.sameEverywhere && c.gotPositions[static_cast<size_t>(k)] == c.gotPositions[static_cast<size_t>(a * n + k)];
            cmp.expectedSame = cmp.expectedSame && s.table.positions(k, 0) == s.table.positions(k, a);
        }
    }
    return cmp;
}

// The text row of a [4, B, L] table, where the axes all match: 0, 1, 2, ... over the attended tokens.
void checkTextRow(const IntView& pos, int64_t length, const SamplePositions& s, SampleCheck& c)
{
    for (int64_t k = 0; k < c.tokens && c.firstToken < 0; ++k) {
        const int64_t got = pos[s.row * length + s.where[static_cast<size_t>(k)]];
        if (got != k) {
            c.firstToken = s.where[static_cast<size_t>(k)];
            c.axis = 3;
            c.got = got;
            c.expected = k;
            c.segment = c.segments[static_cast<size_t>(k)];
            c.differing = 1;
        }
    }
}

// The sequential families: 0, 1, 2, ... over the attended tokens, where a given 0 after the first, followed by 1 (or
// by another 0, or ending the row), starts the next packed sequence (transformers' packed format: position ids that
// restart, as find_packed_sequence_indices reads them); a lone 0 amid a count is a wrong position, not a restart.
// Fills c as compareAxes does, and names a fault: every position 0 (each token its own "sequence"), one offset, or
// the count that differs.
void compareSequential(const IntView& pos, int64_t length, const SamplePositions& s, SampleCheck& c, int64_t& maxExpected)
{
    const int64_t n = c.tokens;
    c.gotPositions.resize(static_cast<size_t>(n));
    c.expectedPositions.resize(static_cast<size_t>(n));
    std::set<int64_t> offsets;
    int64_t start = 0;
    const auto given = [&](int64_t k) { return pos[s.row * length + s.where[static_cast<size_t>(k)]]; };
    for (int64_t k = 0; k < n; ++k) {
        const auto at = static_cast<size_t>(k);
        const int64_t got = given(k);
        if (k > 0 && got == 0 && (k + 1 == n || given(k + 1) == 0 || given(k + 1) == 1)) {
            start = k;
            ++c.sequences;
        }
        const int64_t expected = k - start;
        c.gotPositions[at] = got;
        c.expectedPositions[at] = expected;
        maxExpected = std::max(maxExpected, expected);
        offsets.insert(got - expected);
        if (got != expected) {
            ++c.differing;
            if (c.firstToken < 0) {
                c.firstToken = s.where[at];
                c.axis = 0;
                c.got = got;
                c.expected = expected;
                c.segment = c.segments[at];
            }
        }
    }
    if (n > 1 && c.sequences == n) { // all zeros: read as packed, n sequences of one token, which no pipeline means
        c.kind = FaultKind::Other;
        c.detail = "every position is 0 (" + std::to_string(n) + " tokens): constant positions, not packed sequences";
        c.firstToken = s.where[1];
        c.axis = 0;
        c.got = 0;
        c.expected = 1;
        c.segment = c.segments[1];
        c.differing = n - 1;
    } else if (c.firstToken >= 0 && offsets.size() == 1) {
        c.kind = FaultKind::Offset;
        c.detail = "every position is " + std::to_string(std::abs(*offsets.begin())) + (*offsets.begin() > 0 ? " above" : " below") +
            " the rule's";
    } else if (c.firstToken >= 0) {
        c.kind = FaultKind::Other;
        c.detail = std::to_string(c.differing) + " of " + std::to_string(n) + " tokens differ";
    }
    if (c.sequences > 1 && c.kind != FaultKind::None)
        c.detail += " (" + std::to_string(c.sequences) + " packed sequences)";
}

// Within the first differing video: the t values it got, frame by frame, against the rule's, in words.
std::string temporalDetail(const SampleCheck& c, int timeAxis)
{
    const int64_t n = c.tokens;
    const std::string video = videoOf(c.segment);
    std::vector<int64_t> gotT, expectedT;
    for (int64_t k = 0; k < n; ++k)
        if (videoOf(c.segments[static_cast<size_t>(k)]) == video) {
            const auto at = static_cast<size_t>(timeAxis * n + k);
            const int64_t g = c.gotPositions[at], e = c.expectedPositions[at];
            if (expectedT.empty() || e != expectedT.back()) {
                expectedT.push_back(e);
                gotT.push_back(g);
            }
        }
    const bool constant = std::all_of(gotT.begin(), gotT.end(), [&](int64_t g) { return g == gotT.front(); });
    const int64_t gotStep = gotT.size() > 1 ? gotT[1] - gotT[0] : 0, expectedStep = expectedT.size() > 1 ? expectedT[1] - expectedT[0] : 0;
    return constant && expectedT.size() > 1
        ? "t is constant within " + video + "; the rule steps it by " + std::to_string(expectedStep) + " a frame"
        : "t steps by " + std::to_string(gotStep) + " a frame in " + video + "; the rule steps it by " + std::to_string(expectedStep);
}

// Whether rows 0..components-1 of a [4, B, L] table, at sample b's attended tokens, are the rule's positions: the
// table's rows are the rule's with a fourth after them, not the text row first that [4, B, L] means.
bool firstRowsAreExpected(const IntView& pos, int64_t b, const std::vector<int64_t>& where, const std::vector<int64_t>& expected,
                          int components)
{
    const int64_t rows = pos.shape[1], length = pos.shape[2], n = static_cast<int64_t>(where.size());
    for (int a = 0; a < components; ++a)
        for (int64_t k = 0; k < n; ++k)
            if (pos[(a * rows + b) * length + where[static_cast<size_t>(k)]] != expected[static_cast<size_t>(a * n + k)])
                return false;
    return true;
}

// Names the fault of a sample with a differing position (c.firstToken >= 0) from what the comparison saw. `rowsFirst`:
// a [4, B, L] table whose rows 0-2 are the rule's t, h, w (a [3, B, L] table with a row after it).
void classifyFault(SampleCheck& c, const AxisComparison& cmp, bool textRow, bool rowsFirst, bool xd, int timeAxis)
{
    const int64_t n = c.tokens;
    if (textRow && rowsFirst) {
        c.kind = FaultKind::Other;
        c.detail = "position_ids is [4, B, L], read as (text, t, h, w), but its rows 0-2 are the rule's t, h, w: a [3, B, L] "
                   "table with a row after it? pass position_ids[:3], or put the text row first";
    } else if (textRow && c.axis == 3) {
        c.kind = FaultKind::Other;
        c.detail = "position_ids is [4, B, L], read as (text, t, h, w): its row 0, the text row, is not 0, 1, 2, ... over the "
                   "attended tokens";
    } else if (cmp.sameEverywhere && !cmp.expectedSame) {
        c.kind = FaultKind::OneD;
        c.detail = std::string(xd ? "p = w = h = t" : "t = h = w") + " on all " + std::to_string(n) + " tokens";
    } else if (cmp.offsets.size() == 1 && *cmp.offsets.begin() != 0) {
        c.kind = FaultKind::Offset;
        c.detail = "every position is " + std::to_string(std::abs(*cmp.offsets.begin())) +
            (*cmp.offsets.begin() > 0 ? " above" : " below") + " the rule's";
    } else if (c.segment.compare(0, 5, "video") == 0 && c.axis == timeAxis) {
        c.kind = FaultKind::Temporal;
        c.detail = temporalDetail(c, timeAxis);
    } else {
        c.kind = FaultKind::Other;
        c.detail = std::to_string(c.differing) + " of " + std::to_string(n) + " tokens differ";
    }
}

} // namespace

void checkBatchEach(const Batch& batch, const IntView& pos, const IntView& deltas, const FamilyRule& rule, bool keepPositions,
                    const std::function<void(SampleCheck&&)>& each)
{
    const int components = rule.components(); // 3 (t, h, w), XD-RoPE's 4 (p, w, h, t), or the sequential families' 1
    const bool xd = components == 4, sequential = components == 1;
    checkPositionShapes(batch, pos, deltas, components);
    const IntView& ids = batch.inputIds;
    forEachSample(batch, rule, [&](const SamplePositions& s) {
        const int64_t rows = ids.shape[0], length = ids.shape[1], b = s.row;
        // [4, B, L] of a 3-row family: row 0 is the text position, then t, h, w.
        const int axisBase = !xd && !sequential && pos.shape[0] == 4 ? 1 : 0;
        const int timeAxis = xd ? 3 : 0;
        SampleCheck c;
        c.row = static_cast<int>(b);
        c.tokens = static_cast<int64_t>(s.where.size());
        c.segments = sequential ? sequentialNames(s, rule) : segmentNames(s, rule.splitVideoFrames);
        int64_t maxExpected = 0;
        if (sequential) {
            compareSequential(pos, length, s, c, maxExpected);
        } else {
            const AxisComparison cmp = compareAxes(pos, rows, length, axisBase, components, s, c);
            maxExpected = cmp.maxExpected;
            if (axisBase == 1)
                checkTextRow(pos, length, s, c);
            if (c.firstToken >= 0) {
                const bool rowsFirst = axisBase == 1 && firstRowsAreExpected(pos, b, s.where, c.expectedPositions, components);
                classifyFault(c, cmp, axisBase == 1, rowsFirst, xd, timeAxis);
            }
        }
        if (c.firstToken < 0 && deltas.given) {
            const int64_t expectedDelta = maxExpected + 1 - length, got = deltas[b];
            if (got != expectedDelta) {
                c.kind = FaultKind::RopeDeltas;
                c.got = got;
                c.expected = expectedDelta;
                c.detail = "rope_deltas " + std::to_string(got) + ", the positions give " + std::to_string(expectedDelta);
            }
        }
        if (keepPositions) {
            c.layout = s.table.layout.toString();
        } else { // freed, not cleared: clear() keeps the capacity
            std::vector<int64_t>().swap(c.gotPositions);
            std::vector<int64_t>().swap(c.expectedPositions);
            std::vector<std::string>().swap(c.segments);
        }
        each(std::move(c));
    });
}

std::vector<SampleCheck> checkBatch(const Batch& batch, const IntView& pos, const IntView& deltas, const FamilyRule& rule,
                                    bool keepPositions)
{
    std::vector<SampleCheck> out;
    checkBatchEach(batch, pos, deltas, rule, keepPositions, [&](SampleCheck&& c) { out.push_back(std::move(c)); });
    return out;
}

} // namespace ropescope::positions

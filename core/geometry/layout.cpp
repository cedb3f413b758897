#include "core/geometry/layout.h"

#include "core/geometry/errors.h"

#include <cctype>
#include <charconv>

namespace ropescope::geometry {
namespace {

std::string trimmed(const std::string& s)
{
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        size_t pos = s.find(sep, start);
        parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
        if (pos == std::string::npos)
            return parts;
        start = pos + 1;
    }
}

[[noreturn]] void fail(size_t index, const std::string& segment, const std::string& why)
{
    throw InvalidInput("layout", "segment " + std::to_string(index + 1) + " '" + segment + "': " + why);
}

int parseSize(const std::string& text, size_t index, const std::string& segment, const char* what)
{
    if (text.empty())
        fail(index, segment, std::string("missing ") + what);
    long long value = 0;
    const char* first = text.data();
    const char* last = first + text.size();
    bool negative = *first == '-';
    auto [ptr, ec] = std::from_chars(negative ? first + 1 : first, last, value);
    if (ec == std::errc::result_out_of_range)
        fail(index, segment, std::string(what) + " '" + text + "' is too large");
    if (ec != std::errc() || ptr != last)
        fail(index, segment, std::string(what) + " '" + text + "' is not a whole number");
    if (negative || value <= 0)
        fail(index, segment, std::string(what) + " must be at least 1, got " + text);
    if (value > kMaxLayoutTokens)
        fail(index, segment, std::string(what) + " " + text + " exceeds the limit of " + std::to_string(kMaxLayoutTokens) + " tokens");
    return static_cast<int>(value);
}

Segment parseSegment(const std::string& raw, size_t index)
{
    const std::string text = trimmed(raw);
    if (text.empty())
        fail(index, text, "empty segment (stray comma?)");
    const size_t colon = text.find(':');
    if (colon == std::string::npos)
        fail(index, text, "expected kind:size, e.g. text:4, image:3x3 or video:2x3x3");
    const std::string kind = trimmed(text.substr(0, colon));
    const std::vector<std::string> dims = split(trimmed(text.substr(colon + 1)), 'x');

    Segment seg;
    if (kind == "text") {
        if (dims.size() != 1)
            fail(index, text, "text takes one size, e.g. text:4");
        seg.kind = SegmentKind::Text;
        seg.length = parseSize(dims[0], index, text, "token count");
    } else if (kind == "image") {
        if (dims.size() != 2)
            fail(index, text, "image takes HxW, e.g. image:3x3");
        seg.kind = SegmentKind::Image;
        seg.rows = parseSize(dims[0], index, text, "grid height");
        seg.cols = parseSize(dims[1], index, text, "grid width");
    } else if (kind == "video") {
        if (dims.size() != 3)
            fail(index, text, "video takes TxHxW, e.g. video:4x3x3");
        seg.kind = SegmentKind::Video;
        seg.frames = parseSize(dims[0], index, text, "frame count");
        seg.rows = parseSize(dims[1], index, text, "grid height");
        seg.cols = parseSize(dims[2], index, text, "grid width");
    } else {
        fail(index, text, "unknown kind '" + kind + "' (expected text, image or video)");
    }
    // Each factor is <= 2^20, so the product of three fits in 64 bits.
    if (seg.tokenCount() > kMaxLayoutTokens)
        fail(index, text, std::to_string(seg.tokenCount()) + " tokens exceed the limit of " + std::to_string(kMaxLayoutTokens));
    return seg;
}

} // namespace

long long Segment::tokenCount() const
{
    if (kind == SegmentKind::Text)
        return length;
    return static_cast<long long>(frames) * rows * cols;
}

std::string Segment::toString() const
{
    switch (kind) {
    case SegmentKind::Text: return "text:" + std::to_string(length);
    case SegmentKind::Image: return "image:" + std::to_string(rows) + "x" + std::to_string(cols);
    case SegmentKind::Video: return "video:" + std::to_string(frames) + "x" + std::to_string(rows) + "x" + std::to_string(cols);
    }
    return {};
}

long long Layout::tokenCount() const
{
    long long total = 0;
    for (const Segment& s : segments)
        total += s.tokenCount();
    return total;
}

std::string Layout::toString() const
{
    std::string out;
    for (const Segment& s : segments) {
        if (!out.empty())
            out += ',';
        out += s.toString();
    }
    return out;
}

Layout parseLayout(const std::string& spec)
{
    if (trimmed(spec).empty())
        throw InvalidInput("layout", "empty; expected e.g. text:4,image:3x3,text:5");
    Layout layout;
    const std::vector<std::string> parts = split(spec, ',');
    if (parts.size() > static_cast<size_t>(kMaxLayoutSegments))
        throw InvalidInput(
            "layout", std::to_string(parts.size()) + " segments exceed the limit of " + std::to_string(kMaxLayoutSegments) + " segments");
    long long total = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        layout.segments.push_back(parseSegment(parts[i], i));
        total += layout.segments.back().tokenCount();
        if (total > kMaxLayoutTokens)
            throw InvalidInput("layout",
                               std::to_string(total) + "+ tokens exceed the limit of " + std::to_string(kMaxLayoutTokens) + " tokens");
    }
    return layout;
}

} // namespace ropescope::geometry

#include "core/user_schemes/json_pull.h"

#include <cstdlib>
#include <cstring>

namespace ropescope::user_schemes {

void JsonPull::fail(const std::string& what) const
{
    throw JsonPullError("not JSON: " + what + " at byte " + std::to_string(offset()));
}

void JsonPull::space()
{
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
        ++p_;
}

void JsonPull::expect(char c)
{
    space();
    if (p_ >= end_ || *p_ != c)
        fail(std::string("expected '") + c + "'");
    ++p_;
}

// After '{' or '[' or an item: whether another item follows (consuming the ',') or the container closes.
bool JsonPull::more(char close)
{
    space();
    if (p_ >= end_)
        fail("the text ends inside a container");
    if (*p_ == close) {
        ++p_;
        first_ = false;
        return false;
    }
    if (!first_) {
        if (*p_ != ',')
            fail(std::string("expected ',' or '") + close + "'");
        ++p_;
    }
    first_ = false;
    return true;
}

bool JsonPull::nextKey(std::string* key)
{
    if (!more('}'))
        return false;
    *key = string();
    expect(':');
    return true;
}

bool JsonPull::nextItem()
{
    return more(']');
}

namespace {

void appendUtf8(std::string& out, unsigned code)
{
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

int hexValue(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

} // namespace

std::string JsonPull::string()
{
    expect('"');
    std::string out;
    for (;;) {
        if (p_ >= end_)
            fail("the text ends inside a string");
        const char c = *p_++;
        if (c == '"')
            return out;
        if (static_cast<unsigned char>(c) < 0x20)
            fail("a control character inside a string");
        if (c != '\\') {
            out += c;
            continue;
        }
        if (p_ >= end_)
            fail("the text ends inside an escape");
        const char e = *p_++;
        switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
            if (end_ - p_ < 4)
                fail("a short \\u escape");
            unsigned code = 0;
            for (int i = 0; i < 4; ++i) {
                const int h = hexValue(*p_++);
                if (h < 0)
                    fail("a bad \\u escape");
                code = code * 16 + static_cast<unsigned>(h);
            }
            appendUtf8(out, code >= 0xD800 && code <= 0xDFFF ? 0xFFFD : code); // a lone or paired surrogate: replaced
            break;
        }
        default: fail("an unknown escape");
        }
    }
}

double JsonPull::number()
{
    space();
    // The JSON number grammar, checked before strtod sees a copy of at most 64 characters.
    const char* start = p_;
    if (p_ < end_ && *p_ == '-')
        ++p_;
    const char* digits = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9')
        ++p_;
    if (p_ == digits)
        fail("expected a number");
    if (p_ < end_ && *p_ == '.') {
        const char* fraction = ++p_;
        while (p_ < end_ && *p_ >= '0' && *p_ <= '9')
            ++p_;
        if (p_ == fraction)
            fail("a number without digits after its point");
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
        ++p_;
        if (p_ < end_ && (*p_ == '+' || *p_ == '-'))
            ++p_;
        const char* exponent = p_;
        while (p_ < end_ && *p_ >= '0' && *p_ <= '9')
            ++p_;
        if (p_ == exponent)
            fail("a number without exponent digits");
    }
    if (p_ - start > 64)
        fail("a number of more than 64 characters");
    char buffer[65];
    std::memcpy(buffer, start, static_cast<size_t>(p_ - start));
    buffer[p_ - start] = '\0';
    return std::strtod(buffer, nullptr);
}

bool JsonPull::isNull()
{
    space();
    if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
        p_ += 4;
        return true;
    }
    return false;
}

void JsonPull::skip()
{
    skipValue(0);
}

void JsonPull::skipValue(int depth)
{
    if (depth > 64)
        fail("nesting deeper than 64");
    space();
    if (p_ >= end_)
        fail("expected a value");
    const char c = *p_;
    if (c == '{') {
        beginObject();
        std::string key;
        while (nextKey(&key)) {
            skipValue(depth + 1);
            first_ = false;
        }
    } else if (c == '[') {
        beginArray();
        while (nextItem()) {
            skipValue(depth + 1);
            first_ = false;
        }
    } else if (c == '"') {
        string();
    } else if (c == 't' || c == 'f' || c == 'n') {
        for (const char* word : {"true", "false", "null"}) {
            const size_t n = std::strlen(word);
            if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
                p_ += n;
                return;
            }
        }
        fail("expected a value");
    } else {
        number();
    }
}

void JsonPull::finish()
{
    space();
    if (p_ != end_)
        fail("text after the document");
}

} // namespace ropescope::user_schemes

#pragma once
// A pull reader of JSON text in place, for position tables that may hold millions of tokens: Qt's
// QJsonDocument builds the whole tree first (about 13 times the file), this reads one value at a time in
// memory that does not grow with the file. Every read is bounds-checked; a malformed text throws
// JsonPullError naming the byte where it went wrong. Only what the tables need: objects, arrays, strings
// (escapes decoded, \u to UTF-8), numbers, true/false/null, and skipping any value (nesting at most 64).
#include <QByteArray>

#include <stdexcept>
#include <string>

namespace ropescope::user_schemes {

class JsonPullError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class JsonPull {
public:
    explicit JsonPull(const QByteArray& text) : p_(text.constData()), begin_(text.constData()), end_(text.constData() + text.size()) { }

    void beginObject()
    {
        expect('{');
        first_ = true;
    }
    // The next key of the object being read (false at its end); the reader then stands at the key's value.
    bool nextKey(std::string* key);
    void beginArray()
    {
        expect('[');
        first_ = true;
    }
    // Whether the array being read has another item (false at its end); the reader then stands at the item.
    bool nextItem();

    std::string string();
    double number();
    bool isNull(); // consumes a null when there is one
    void skip();   // any value
    void finish(); // only white space may follow the document

    long long offset() const { return static_cast<long long>(p_ - begin_); }

private:
    [[noreturn]] void fail(const std::string& what) const;
    void space();
    void expect(char c);
    void skipValue(int depth);
    bool more(char close);

    const char* p_;
    const char* begin_;
    const char* end_;
    bool first_ = true;
};

} // namespace ropescope::user_schemes

#include "core/model/engine/tokenizer.h"

#include "core/io/input_file.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringDecoder>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <stdexcept>
#include <utility>

namespace ropescope::model {

struct Tokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

// The pipeline steps a tokenizer.json names, in its order.
struct Tokenizer::Steps {
    struct Normalize {
        enum class Kind { Nfc, Nfkc, Lowercase, Replace, Prepend } kind = Kind::Nfc;
        std::string pattern, content;
    };
    // Hugging Face's SplitDelimiterBehavior: what becomes of each match of a Split pre-tokenizer.
    enum class Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };
    struct Split {
        std::unique_ptr<Regex> regex; // or a literal string; neither: split at ASCII whitespace (dropped)
        std::string literal;
        Behavior behavior = Behavior::Isolated;
    };
    struct Decode {
        enum class Kind { Replace, ByteFallback, Fuse, Strip } kind = Kind::Fuse;
        std::string pattern, content;
        int start = 0, stop = 0;
    };
    std::vector<Normalize> normalizers;
    std::vector<Split> splits;
    std::vector<Decode> decoders; // empty: ByteLevel's byte mapping (or WordLevel's spaces), as before
};

namespace {

constexpr int64_t kMaxVocab = 4'000'000;
constexpr size_t kMaxCachedWord = 256; // longer words (a whole Gemma paragraph is one) are not cached

// GPT-2's reversible byte <-> printable unicode mapping used by byte-level BPE.
const std::array<std::string, 256>& byteToUnicode()
{
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> t;
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
            t[static_cast<size_t>(b)] = QString::fromUcs4(&cp, 1).toStdString();
        }
        return t;
    }();
    return table;
}

const std::unordered_map<std::string, uint8_t>& unicodeToByte()
{
    static const std::unordered_map<std::string, uint8_t> table = [] {
        std::unordered_map<std::string, uint8_t> t;
        for (int b = 0; b < 256; ++b)
            t[byteToUnicode()[static_cast<size_t>(b)]] = static_cast<uint8_t>(b);
        return t;
    }();
    return table;
}

// UTF-8 characters of s (assumed valid UTF-8).
std::vector<std::string> characters(const std::string& s)
{
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        out.push_back(s.substr(i, std::min(len, s.size() - i)));
        i += len;
    }
    return out;
}

// UTF-8 as text, a leading U+FEFF kept: QString::fromUtf8 drops it as a byte order mark, but in a tokenizer's
// input or output it is a character like any other (Gemma has tokens for it). Stateless: a cut-off character
// at the end is U+FFFD, not held back.
QString utf8(const std::string& s)
{
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::ConvertInitialBom | QStringDecoder::Flag::Stateless);
    return decoder(QByteArrayView(s.data(), static_cast<qsizetype>(s.size())));
}

void replaceAll(std::string& s, const std::string& from, const std::string& to)
{
    if (from.empty())
        return;
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size())
        out.append(s, pos, at - pos).append(to);
    if (pos == 0)
        return;
    s = out.append(s, pos, std::string::npos);
}

[[noreturn]] void bad(const QString& name, const std::string& why)
{
    throw BadInputFile(name.toStdString() + ": " + why);
}

uint64_t pairKey(int64_t left, int64_t right)
{
    return (static_cast<uint64_t>(left) << 32) | static_cast<uint64_t>(right);
}

// A vocab-like object of token -> id.
int64_t parseVocab(const QJsonObject& vocab, const QString& name, std::unordered_map<std::string, int64_t>& out)
{
    if (vocab.isEmpty() || vocab.size() > kMaxVocab)
        bad(name, "model.vocab must be a non-empty object of at most 4M tokens");
    out.reserve(static_cast<size_t>(vocab.size()));
    int64_t maxId = -1;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        const double id = it.value().toDouble(-1);
        if (!it.value().isDouble() || id < 0 || id >= kMaxVocab || id != static_cast<double>(static_cast<int64_t>(id)))
            bad(name, "vocab id of '" + it.key().toStdString() + "' is not a valid id");
        out[it.key().toStdString()] = static_cast<int64_t>(id);
        maxId = std::max(maxId, static_cast<int64_t>(id));
    }
    return maxId;
}

// One merge as its two tokens. The string form "a b" is split at its space; where a token itself holds a space
// (only the [a, b] form can say so unambiguously) the one split whose parts and their join are all tokens counts.
std::pair<std::string, std::string> mergePair(const QJsonValue& m, const std::unordered_map<std::string, int64_t>& vocab,
                                              const QString& name)
{
    if (m.isArray()) {
        const QJsonArray pair = m.toArray();
        if (pair.size() == 2 && pair[0].isString() && pair[1].isString())
            return {pair[0].toString().toStdString(), pair[1].toString().toStdString()};
    }
    if (!m.isString())
        bad(name, "merges must be 'a b' strings or [a, b] pairs");
    const std::string s = m.toString().toStdString();
    std::vector<std::pair<std::string, std::string>> splits;
    for (size_t at = s.find(' ', 1); at != std::string::npos && at + 1 < s.size(); at = s.find(' ', at + 1))
        splits.emplace_back(s.substr(0, at), s.substr(at + 1));
    if (splits.size() > 1) {
        auto known = [&](const auto& p) { return vocab.count(p.first) && vocab.count(p.second) && vocab.count(p.first + p.second); };
        splits.erase(std::remove_if(splits.begin(), splits.end(), [&](const auto& p) { return !known(p); }), splits.end());
        if (splits.size() > 1)
            bad(name, "merge '" + s + "' splits into known tokens in more than one way");
    }
    if (splits.empty())
        bad(name, "merge '" + s + "' is not 'left right'");
    return splits.front();
}

// Split pieces of a pre-tokenizer: "Regex" or "String" pattern, and its behaviour.
Tokenizer::Steps::Split parseSplit(const QJsonObject& x, const QString& name,
                                   std::unique_ptr<Tokenizer::Regex> (*compile)(const QString&, const QString&))
{
    using Behavior = Tokenizer::Steps::Behavior;
    static const std::unordered_map<std::string, Behavior> behaviors = {{"Isolated", Behavior::Isolated},
                                                                        {"Removed", Behavior::Removed},
                                                                        {"MergedWithPrevious", Behavior::MergedWithPrevious},
                                                                        {"MergedWithNext", Behavior::MergedWithNext},
                                                                        {"Contiguous", Behavior::Contiguous}};
    Tokenizer::Steps::Split split;
    const auto behavior = behaviors.find(x["behavior"].toString().toStdString());
    if (behavior == behaviors.end() || x["invert"].toBool())
        bad(name, "Split needs a behavior (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous) and invert false");
    split.behavior = behavior->second;
    const QJsonObject pattern = x["pattern"].toObject();
    if (pattern["Regex"].isString() && !pattern["Regex"].toString().isEmpty())
        split.regex = compile(pattern["Regex"].toString(), name);
    else if (pattern["String"].isString() && !pattern["String"].toString().isEmpty())
        split.literal = pattern["String"].toString().toStdString();
    else
        bad(name, "Split needs a non-empty Regex or String pattern");
    return split;
}

std::unique_ptr<Tokenizer::Regex> compileRegex(const QString& pattern, const QString& name)
{
    int code = 0;
    PCRE2_SIZE offset = 0;
    const QByteArray utf8 = pattern.toUtf8();
    auto regex = std::make_unique<Tokenizer::Regex>();
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(utf8.constData()), static_cast<PCRE2_SIZE>(utf8.size()), PCRE2_UTF | PCRE2_UCP,
                                &code, &offset, nullptr);
    if (!regex->code)
        bad(name, "pre-tokenizer regex does not compile at offset " + std::to_string(offset));
    pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE); // optional speed-up; falls back silently
    return regex;
}

// The steps of a "Sequence" (under `listKey`) or the one step itself.
std::vector<QJsonObject> sequence(const QJsonValue& value, const char* listKey)
{
    std::vector<QJsonObject> out;
    const QJsonObject o = value.toObject();
    if (o["type"].toString() == "Sequence")
        for (const QJsonValue& x : o[listKey].toArray())
            out.push_back(x.toObject());
    else if (!o.isEmpty())
        out.push_back(o);
    return out;
}

// A Replace step's literal pattern (a Regex one is not supported).
std::string replacePattern(const QJsonObject& step, const QString& name, const char* what)
{
    const QJsonValue pattern = step["pattern"].toObject()["String"];
    if (!pattern.isString() || pattern.toString().isEmpty() || !step["content"].isString())
        bad(name, std::string(what) + " Replace needs a non-empty String pattern and a content string");
    return pattern.toString().toStdString();
}

std::vector<Tokenizer::Steps::Normalize> parseNormalizers(const QJsonObject& root, const QString& name)
{
    using Kind = Tokenizer::Steps::Normalize::Kind;
    std::vector<Tokenizer::Steps::Normalize> out;
    for (const QJsonObject& n : sequence(root["normalizer"], "normalizers")) {
        const QString type = n["type"].toString();
        if (type == "NFC")
            out.push_back({Kind::Nfc, {}, {}});
        else if (type == "NFKC")
            out.push_back({Kind::Nfkc, {}, {}});
        else if (type == "Lowercase")
            out.push_back({Kind::Lowercase, {}, {}});
        else if (type == "Replace")
            out.push_back({Kind::Replace, replacePattern(n, name, "normalizer"), n["content"].toString().toStdString()});
        else if (type == "Prepend" && n["prepend"].isString())
            out.push_back({Kind::Prepend, {}, n["prepend"].toString().toStdString()});
        else
            bad(name, "unsupported normalizer '" + type.toStdString() + "'");
    }
    return out;
}

std::vector<Tokenizer::Steps::Decode> parseDecoders(const QJsonObject& root, const QString& name)
{
    using Kind = Tokenizer::Steps::Decode::Kind;
    std::vector<Tokenizer::Steps::Decode> out;
    for (const QJsonObject& d : sequence(root["decoder"], "decoders")) {
        const QString type = d["type"].toString();
        if (type == "ByteLevel")
            continue; // the byte mapping decode() always applies to a byte-level vocabulary
        Tokenizer::Steps::Decode step;
        if (type == "Replace") {
            step = {Kind::Replace, replacePattern(d, name, "decoder"), d["content"].toString().toStdString(), 0, 0};
        } else if (type == "ByteFallback") {
            step.kind = Kind::ByteFallback;
        } else if (type == "Fuse") {
            step.kind = Kind::Fuse;
        } else if (type == "Strip") {
            const int start = d["start"].toInt(-1), stop = d["stop"].toInt(-1);
            if (d["content"].toString().size() != 1 || start < 0 || stop < 0 || start > 1000 || stop > 1000)
                bad(name, "decoder Strip needs a one-character content and start/stop counts from 0 to 1000");
            step = {Kind::Strip, {}, d["content"].toString().toStdString(), start, stop};
        } else {
            bad(name, "unsupported decoder '" + type.toStdString() + "' (ByteLevel, Replace, ByteFallback, Fuse, Strip)");
        }
        out.push_back(std::move(step));
    }
    return out;
}

} // namespace

QByteArray escapeByteOrderMarks(QByteArray json)
{
    static const QByteArray bom("\xEF\xBB\xBF");
    if (json.startsWith(bom))
        json.remove(0, bom.size()); // the document's own mark, outside any string
    if (json.contains(bom))
        json.replace(bom, "\\ufeff");
    return json;
}

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const QString& path)
{
    try {
        return fromJson(io::readInputFile(path, 512 << 20, "tokenizer"), path);
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
}

namespace {

// Parses the merges into (left, right) -> rank and merged id; a later duplicate wins, as in both references.
void parseMerges(const QJsonArray& merges, const std::unordered_map<std::string, int64_t>& vocab, const QString& name,
                 std::unordered_map<uint64_t, Tokenizer::Merge>& out)
{
    out.reserve(static_cast<size_t>(merges.size()));
    int rank = 0;
    for (const QJsonValue& m : merges) {
        const auto [left, right] = mergePair(m, vocab, name);
        const auto l = vocab.find(left), r = vocab.find(right), joined = vocab.find(left + right);
        if (l == vocab.end() || r == vocab.end() || joined == vocab.end())
            bad(name, "merge '" + left + " " + right + "' uses a token missing from the vocab");
        out[pairKey(l->second, r->second)] = {rank++, joined->second};
    }
}

} // namespace

Tokenizer Tokenizer::fromJson(const QByteArray& rawJson, const QString& name)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(escapeByteOrderMarks(rawJson), &error);
    if (doc.isNull() || !doc.isObject())
        bad(name, "not a JSON object (" + error.errorString().toStdString() + ")");
    const QJsonObject root = doc.object();
    Tokenizer t;
    t.steps_ = std::make_unique<Steps>();

    const QJsonObject model = root["model"].toObject();
    const QString type = model["type"].toString();
    if (type == "BPE")
        t.model_ = Model::Bpe;
    else if (type == "WordLevel")
        t.model_ = Model::WordLevel;
    else
        bad(name, "unsupported tokenizer model '" + type.toStdString() + "' (BPE or WordLevel)");

    int64_t maxId = parseVocab(model["vocab"].toObject(), name, t.vocab_);
    for (const QJsonValue& a : root["added_tokens"].toArray()) {
        const QJsonObject o = a.toObject();
        const double id = o["id"].toDouble(-1);
        if (!o["content"].isString() || o["content"].toString().isEmpty() || id < 0 || id >= kMaxVocab)
            bad(name, "added_tokens entries need a content string and a valid id");
        t.added_.push_back({o["content"].toString().toStdString(), static_cast<int64_t>(id), o["special"].toBool()});
        maxId = std::max(maxId, static_cast<int64_t>(id));
    }
    t.idToToken_.assign(static_cast<size_t>(maxId + 1), std::string());
    t.isSpecial_.assign(static_cast<size_t>(maxId + 1), false);
    t.isAdded_.assign(static_cast<size_t>(maxId + 1), false);
    for (const auto& [token, id] : t.vocab_)
        t.idToToken_[static_cast<size_t>(id)] = token;
    for (size_t i = 0; i < t.added_.size(); ++i) {
        const AddedToken& a = t.added_[i];
        t.idToToken_[static_cast<size_t>(a.id)] = a.content;
        t.isSpecial_[static_cast<size_t>(a.id)] = a.special;
        t.isAdded_[static_cast<size_t>(a.id)] = true;
        t.addedIndex_[a.content] = i; // a repeated content: the last entry's id, as a map built from the list
        t.addedFirstByte_[static_cast<unsigned char>(a.content[0])] = true;
        t.addedLengths_.push_back(a.content.size());
    }
    std::sort(t.addedLengths_.begin(), t.addedLengths_.end(), std::greater<>());
    t.addedLengths_.erase(std::unique(t.addedLengths_.begin(), t.addedLengths_.end()), t.addedLengths_.end());

    if (t.model_ == Model::Bpe) {
        parseMerges(model["merges"].toArray(), t.vocab_, name, t.merges_);
        t.byteFallback_ = model["byte_fallback"].toBool();
        t.fuseUnk_ = model["fuse_unk"].toBool();
        t.ignoreMerges_ = model["ignore_merges"].toBool();
    }
    t.byteTokens_.fill(-1);
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        if (const auto it = t.vocab_.find(hex); it != t.vocab_.end())
            t.byteTokens_[static_cast<size_t>(b)] = it->second;
    }
    if (model["unk_token"].isString() && !model["unk_token"].toString().isEmpty()) {
        const std::string unk = model["unk_token"].toString().toStdString();
        if (!t.vocab_.count(unk))
            bad(name, "unk_token '" + unk + "' is not in the vocab");
        t.unk_ = t.vocab_.at(unk);
    }

    t.steps_->normalizers = parseNormalizers(root, name);
    for (const QJsonObject& x : sequence(root["pre_tokenizer"], "pretokenizers")) {
        const QString pt = x["type"].toString();
        if (pt == "ByteLevel") {
            t.byteLevel_ = true;
            if (x["use_regex"].toBool(true) && t.steps_->splits.empty())
                bad(name, "ByteLevel with use_regex needs GPT-2's regex; not supported, use an explicit Split");
        } else if (pt == "Split") {
            t.steps_->splits.push_back(parseSplit(x, name, compileRegex));
        } else if (pt == "Whitespace" || pt == "WhitespaceSplit") {
            t.steps_->splits.push_back({nullptr, {}, Steps::Behavior::Removed});
        } else {
            bad(name, "unsupported pre-tokenizer '" + pt.toStdString() + "'");
        }
    }
    t.steps_->decoders = parseDecoders(root, name);
    return t;
}

std::optional<std::string> Tokenizer::tokenText(int64_t id) const
{
    if (id < 0 || id >= static_cast<int64_t>(idToToken_.size()))
        return std::nullopt;
    const std::string& text = idToToken_[static_cast<size_t>(id)];
    if (text.empty()) // a gap in the ids: no token has it
        return std::nullopt;
    return text;
}

std::optional<int64_t> Tokenizer::tokenId(const std::string& token) const
{
    if (const auto it = addedIndex_.find(token); it != addedIndex_.end())
        return added_[it->second].id;
    if (const auto it = vocab_.find(token); it != vocab_.end())
        return it->second;
    return std::nullopt;
}

// A symbol the vocab lacks: its bytes as <0xNN> tokens where byte_fallback has them all, else unk (or nothing).
void Tokenizer::spell(const std::string& symbol, std::vector<int64_t>& out) const
{
    if (byteFallback_ &&
        std::all_of(symbol.begin(), symbol.end(), [&](char c) { return byteTokens_[static_cast<unsigned char>(c)] >= 0; })) {
        for (char c : symbol)
            out.push_back(byteTokens_[static_cast<unsigned char>(c)]);
        return;
    }
    if (unk_ && !(fuseUnk_ && !out.empty() && out.back() == *unk_))
        out.push_back(*unk_);
}

// BPE on one word: its characters, then the lowest-ranked adjacent pair merged (leftmost first among equal
// ranks) until no pair is a merge. A heap of candidate pairs over a linked list keeps a long word (a Gemma
// paragraph is one word) at n log n; a candidate whose symbols changed since it was queued is skipped.
void Tokenizer::bpe(const std::string& word, std::vector<int64_t>& out) const
{
    const bool cacheable = word.size() < kMaxCachedWord;
    if (cacheable)
        if (const auto it = cache_.find(word); it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    std::vector<int64_t> ids;
    if (const auto whole = vocab_.find(word); ignoreMerges_ && whole != vocab_.end()) {
        ids.push_back(whole->second);
    } else {
        const std::vector<std::string> chars = characters(word);
        const int n = static_cast<int>(chars.size());
        std::vector<int64_t> symbol(chars.size(), -1); // vocab id, or -1: spelled at the end
        std::vector<int> next(chars.size()), prev(chars.size());
        for (int i = 0; i < n; ++i) {
            if (const auto it = vocab_.find(chars[static_cast<size_t>(i)]); it != vocab_.end())
                symbol[static_cast<size_t>(i)] = it->second;
            next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
            prev[static_cast<size_t>(i)] = i - 1;
        }
        struct Candidate {
            int rank, left, right;
            int64_t leftId, rightId;
            bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
        };
        std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
        auto consider = [&](int left) {
            const int right = left < 0 ? -1 : next[static_cast<size_t>(left)];
            if (right < 0 || symbol[static_cast<size_t>(left)] < 0 || symbol[static_cast<size_t>(right)] < 0)
                return;
            const auto m = merges_.find(pairKey(symbol[static_cast<size_t>(left)], symbol[static_cast<size_t>(right)]));
            if (m != merges_.end())
                heap.push({m->second.rank, left, right, symbol[static_cast<size_t>(left)], symbol[static_cast<size_t>(right)]});
        };
        for (int i = 0; i + 1 < n; ++i)
            consider(i);
        while (!heap.empty()) {
            const Candidate c = heap.top();
            heap.pop();
            const auto l = static_cast<size_t>(c.left), r = static_cast<size_t>(c.right);
            if (next[l] != c.right || symbol[l] != c.leftId || symbol[r] != c.rightId)
                continue; // stale: one side merged since
            symbol[l] = merges_.at(pairKey(c.leftId, c.rightId)).merged;
            symbol[r] = -2; // gone
            next[l] = next[r];
            if (next[l] >= 0)
                prev[static_cast<size_t>(next[l])] = c.left;
            consider(prev[l]);
            consider(c.left);
        }
        for (int i = n > 0 ? 0 : -1; i >= 0; i = next[static_cast<size_t>(i)]) {
            if (symbol[static_cast<size_t>(i)] >= 0)
                ids.push_back(symbol[static_cast<size_t>(i)]);
            else
                spell(chars[static_cast<size_t>(i)], ids);
        }
    }
    if (cacheable && cache_.size() < 100000)
        cache_.emplace(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
}

namespace {

// Byte ranges [begin, end) of the pattern's matches in `piece`, left to right, none overlapping.
std::vector<std::pair<size_t, size_t>> matches(const Tokenizer::Steps::Split& split, const std::string& piece)
{
    std::vector<std::pair<size_t, size_t>> out;
    if (!split.regex && split.literal.empty()) { // whitespace
        for (size_t i = 0; i < piece.size(); ++i)
            if (piece[i] == ' ' || piece[i] == '\t' || piece[i] == '\n' || piece[i] == '\r')
                out.emplace_back(i, i + 1);
        return out;
    }
    if (!split.regex) {
        for (size_t at = piece.find(split.literal); at != std::string::npos; at = piece.find(split.literal, at + split.literal.size()))
            out.emplace_back(at, at + split.literal.size());
        return out;
    }
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(split.regex->code, nullptr);
    PCRE2_SIZE start = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
    while (start <= piece.size()) {
        if (pcre2_match(split.regex->code, subject, piece.size(), start, 0, match, nullptr) < 0)
            break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        if (ov[1] > ov[0])
            out.emplace_back(ov[0], ov[1]);
        start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
        while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80)
            ++start; // never restart inside a UTF-8 character
    }
    pcre2_match_data_free(match);
    return out;
}

// The pieces of one Split step, as Hugging Face's SplitDelimiterBehavior forms them.
std::vector<std::string> splitPiece(const Tokenizer::Steps::Split& split, const std::string& piece)
{
    using Behavior = Tokenizer::Steps::Behavior;
    struct Segment {
        size_t begin, end;
        bool match;
    };
    std::vector<Segment> segments;
    size_t last = 0;
    for (const auto& [b, e] : matches(split, piece)) {
        if (b > last)
            segments.push_back({last, b, false});
        segments.push_back({b, e, true});
        last = e;
    }
    if (last < piece.size())
        segments.push_back({last, piece.size(), false});
    if (split.behavior == Behavior::MergedWithNext)
        std::reverse(segments.begin(), segments.end());
    std::vector<Segment> merged;
    bool previousMatch = false;
    for (const Segment& s : segments) {
        const bool joins = !merged.empty() &&
            ((split.behavior == Behavior::Contiguous && s.match && previousMatch) ||
             ((split.behavior == Behavior::MergedWithPrevious || split.behavior == Behavior::MergedWithNext) && s.match && !previousMatch));
        if (joins) {
            merged.back().begin = std::min(merged.back().begin, s.begin);
            merged.back().end = std::max(merged.back().end, s.end);
        } else if (!(split.behavior == Behavior::Removed && s.match)) {
            merged.push_back(s);
        }
        previousMatch = s.match;
    }
    if (split.behavior == Behavior::MergedWithNext)
        std::reverse(merged.begin(), merged.end());
    std::vector<std::string> out;
    for (const Segment& s : merged)
        out.push_back(piece.substr(s.begin, s.end - s.begin));
    return out;
}

std::string normalize(const std::vector<Tokenizer::Steps::Normalize>& steps, std::string text)
{
    using Kind = Tokenizer::Steps::Normalize::Kind;
    for (const auto& step : steps) {
        switch (step.kind) {
        case Kind::Nfc: text = utf8(text).normalized(QString::NormalizationForm_C).toStdString(); break;
        case Kind::Nfkc: text = utf8(text).normalized(QString::NormalizationForm_KC).toStdString(); break;
        case Kind::Lowercase: text = utf8(text).toLower().toStdString(); break;
        case Kind::Replace: replaceAll(text, step.pattern, step.content); break;
        case Kind::Prepend:
            if (!text.empty())
                text = step.content + text;
            break;
        }
    }
    return text;
}

} // namespace

void Tokenizer::encodePiece(const std::string& piece, std::vector<int64_t>& out, std::vector<std::string>* unknown) const
{
    std::vector<std::string> words{piece};
    for (const Steps::Split& split : steps_->splits) {
        std::vector<std::string> next;
        for (const std::string& w : words)
            for (std::string& p : splitPiece(split, w))
                next.push_back(std::move(p));
        words = std::move(next);
    }
    for (const std::string& w : words) {
        if (model_ == Model::WordLevel) {
            const auto it = vocab_.find(w);
            if (it != vocab_.end())
                out.push_back(it->second);
            else if (unk_)
                out.push_back(*unk_);
            if (it == vocab_.end() && unknown)
                unknown->push_back(w);
            continue;
        }
        if (byteLevel_) {
            std::string mapped;
            for (unsigned char c : w)
                mapped += byteToUnicode()[c];
            bpe(mapped, out);
        } else {
            bpe(w, out);
        }
    }
}

std::vector<int64_t> Tokenizer::encode(const QString& text) const
{
    return encode(text, nullptr);
}

QStringList Tokenizer::unknownWords(const QString& text) const
{
    if (model_ != Model::WordLevel) // also keeps this free of the BPE cache, so any thread may ask
        return {};
    std::vector<std::string> unknown;
    encode(text, &unknown);
    QStringList words;
    for (const std::string& w : unknown)
        words << utf8(w);
    words.removeDuplicates();
    return words;
}

// The longest added token that starts at byte `pos` of `text`, or null.
const Tokenizer::AddedToken* Tokenizer::addedTokenAt(const std::string& text, size_t pos) const
{
    if (!addedFirstByte_[static_cast<unsigned char>(text[pos])])
        return nullptr;
    for (size_t length : addedLengths_) {
        if (length > text.size() - pos)
            continue;
        if (const auto it = addedIndex_.find(text.substr(pos, length)); it != addedIndex_.end())
            return &added_[it->second];
    }
    return nullptr;
}

std::vector<int64_t> Tokenizer::encode(const QString& text, std::vector<std::string>* unknown) const
{
    const std::string raw = text.toStdString();
    std::vector<int64_t> out;
    // Added tokens split the raw text first (leftmost, longest); the pieces between are normalised.
    auto encodeSection = [&](size_t from, size_t to) {
        if (to > from) {
            const std::string piece = normalize(steps_->normalizers, raw.substr(from, to - from));
            if (!piece.empty())
                encodePiece(piece, out, unknown);
        }
    };
    size_t sectionStart = 0;
    for (size_t pos = 0; pos < raw.size();) {
        const AddedToken* token = addedTokenAt(raw, pos);
        if (!token) {
            ++pos;
            continue;
        }
        encodeSection(sectionStart, pos);
        out.push_back(token->id);
        pos += token->content.size();
        sectionStart = pos;
    }
    encodeSection(sectionStart, raw.size());
    return out;
}

// Hugging Face's decoder chain over the tokens: each step maps the list of token strings.
std::string Tokenizer::decodeChain(const std::vector<int64_t>& ids, bool skipSpecial) const
{
    using Kind = Steps::Decode::Kind;
    std::vector<std::string> tokens;
    for (int64_t id : ids)
        if (id >= 0 && id < static_cast<int64_t>(idToToken_.size()) && !(skipSpecial && isSpecial_[static_cast<size_t>(id)]))
            tokens.push_back(idToToken_[static_cast<size_t>(id)]);
    for (const Steps::Decode& step : steps_->decoders) {
        if (step.kind == Kind::Replace) {
            for (std::string& t : tokens)
                replaceAll(t, step.pattern, step.content);
        } else if (step.kind == Kind::Fuse) {
            std::string all;
            for (const std::string& t : tokens)
                all += t;
            tokens.assign(1, all);
        } else if (step.kind == Kind::Strip) { // up to `start` leading and `stop` trailing copies of one character
            const std::string& c = step.content;
            for (std::string& t : tokens) {
                size_t begin = 0, end = t.size();
                for (int k = 0; k < step.start && end - begin >= c.size() && t.compare(begin, c.size(), c) == 0; ++k)
                    begin += c.size();
                for (int k = 0; k < step.stop && end - begin >= c.size() && t.compare(end - c.size(), c.size(), c) == 0; ++k)
                    end -= c.size();
                t = t.substr(begin, end - begin);
            }
        } else { // ByteFallback: runs of <0xNN> become their bytes as UTF-8 text (invalid sequences as U+FFFD)
            std::vector<std::string> joined;
            std::string bytes;
            auto flush = [&] {
                if (!bytes.empty())
                    joined.push_back(utf8(bytes).toStdString());
                bytes.clear();
            };
            for (const std::string& t : tokens) {
                const bool isByte = t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
                    std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4]));
                if (isByte) {
                    bytes += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
                    continue;
                }
                flush();
                joined.push_back(t);
            }
            flush();
            tokens = std::move(joined);
        }
    }
    std::string text;
    for (const std::string& t : tokens)
        text += t;
    return text;
}

QString Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const
{
    if (!steps_->decoders.empty()) {
        const std::string text = decodeChain(ids, skipSpecial);
        return utf8(text);
    }
    std::string bytes;
    std::string pendingByteLevel;
    auto flush = [&] {
        for (const std::string& ch : characters(pendingByteLevel)) {
            const auto it = unicodeToByte().find(ch);
            bytes += it != unicodeToByte().end() ? std::string(1, static_cast<char>(it->second)) : ch;
        }
        pendingByteLevel.clear();
    };
    bool first = true;
    for (int64_t id : ids) {
        if (id < 0 || id >= static_cast<int64_t>(idToToken_.size()))
            continue;
        const auto k = static_cast<size_t>(id);
        if (skipSpecial && isSpecial_[k])
            continue;
        const bool added = isAdded_[k];
        if (byteLevel_ && !added) {
            pendingByteLevel += idToToken_[k];
            continue;
        }
        flush();
        if (!first && model_ == Model::WordLevel && !added)
            bytes += ' ';
        bytes += idToToken_[k];
        first = false;
    }
    flush();
    return utf8(bytes);
}

namespace {

QString imageBlocks(const std::vector<int>& imageTokens)
{
    QString blocks;
    for (int n : imageTokens)
        blocks += "<|vision_start|>" + QString("<|image_pad|>").repeated(n) + "<|vision_end|>";
    return blocks;
}

} // namespace

QString qwenChatPrompt(const QString& question, const std::vector<int>& imageTokens, ChatTemplate chat)
{
    QString prompt = chat == ChatTemplate::Qwen2VL ? "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" : "";
    prompt += "<|im_start|>user\n" + imageBlocks(imageTokens);
    prompt += question + "<|im_end|>\n<|im_start|>assistant\n";
    return prompt;
}

namespace {

bool isGlm(ChatTemplate chat)
{
    return chat == ChatTemplate::Glm41V || chat == ChatTemplate::Glm46V;
}

QString glmChat(const QString& content)
{
    return "[gMASK]<sop><|user|>\n" + content + "<|assistant|>\n";
}

QString glmImage(int tokens)
{
    return "<|begin_of_image|>" + QString("<|image|>").repeated(tokens) + "<|end_of_image|>";
}

} // namespace

VisionMarkers defaultVisionMarkers(ChatTemplate chat)
{
    if (chat == ChatTemplate::Gemma3)
        return {"<image_soft_token>", "<start_of_image>", "<end_of_image>", {}};
    if (chat == ChatTemplate::Gemma4)
        return {"<|image|>", "<|image>", "<image|>", "<|video|>"};
    return {};
}

namespace {

// The Hub's names where `given` leaves a field empty.
VisionMarkers markersFor(ChatTemplate chat, const VisionMarkers& given)
{
    VisionMarkers m = defaultVisionMarkers(chat);
    const auto take = [](QString& field, const QString& value) {
        if (!value.isEmpty())
            field = value;
    };
    take(m.image, given.image);
    take(m.begin, given.begin);
    take(m.end, given.end);
    take(m.video, given.video);
    return m;
}

// One user turn of Gemma's chat template and the model's turn header; the template trims the question.
QString gemmaChat(ChatTemplate chat, const QString& content)
{
    if (chat == ChatTemplate::Gemma3)
        return "<bos><start_of_turn>user\n" + content + "<end_of_turn>\n<start_of_turn>model\n";
    return "<bos><|turn>user\n" + content + "<turn|>\n<|turn>model\n";
}

QString gemmaImages(ChatTemplate chat, const std::vector<int>& imageTokens, const VisionMarkers& given)
{
    const VisionMarkers m = markersFor(chat, given);
    QString blocks;
    for (int n : imageTokens) {
        const QString block = m.begin + m.image.repeated(n) + m.end;
        blocks += chat == ChatTemplate::Gemma3 ? "\n\n" + block + "\n\n" : block; // Gemma3Processor's full_image_sequence
    }
    return blocks;
}

// Gemma4Processor.replace_video_token: each frame after its time "mm:ss" (int(s // 60), int(s % 60)), joined by spaces.
QString gemmaVideo(int frames, int tokensPerFrame, int temporalPatch, double fps, const VisionMarkers& given)
{
    const VisionMarkers m = markersFor(ChatTemplate::Gemma4, given);
    QStringList parts;
    for (int k = 0; k < frames; ++k) {
        const double seconds = static_cast<double>(k) * temporalPatch / fps;
        char stamp[32];
        std::snprintf(stamp, sizeof stamp, "%02lld:%02lld", static_cast<long long>(std::floor(seconds / 60)),
                      static_cast<long long>(std::fmod(seconds, 60.0)));
        parts << QString::fromLatin1(stamp) + " " + m.begin + m.video.repeated(tokensPerFrame) + m.end;
    }
    return parts.join(' ');
}

} // namespace

QString imagePrompt(const Tokenizer& tokenizer, const QString& question, const std::vector<int>& imageTokens, ChatTemplate chat,
                    const VisionMarkers& markers)
{
    if (isGemmaTemplate(chat))
        return gemmaChat(chat, gemmaImages(chat, imageTokens, markers) + question.trimmed());
    if (isGlm(chat)) {
        QString blocks;
        for (int n : imageTokens)
            blocks += glmImage(n);
        return glmChat(blocks + question);
    }
    if (chat == ChatTemplate::PaddleOcrVl) {
        QString prompt = "<|begin_of_sentence|>User: ";
        for (int n : imageTokens)
            prompt += "<|IMAGE_START|>" + QString("<|IMAGE_PLACEHOLDER|>").repeated(n) + "<|IMAGE_END|>";
        return prompt + question + "\nAssistant:\n";
    }
    if (tokenizer.tokenId("<|im_start|>"))
        return qwenChatPrompt(question, imageTokens, chat);
    return imageBlocks(imageTokens) + question;
}

QString videoPrompt(const Tokenizer& tokenizer, const QString& question, int frames, int tokensPerFrame, int temporalPatch,
                    ChatTemplate chat, double fps, const VisionMarkers& markers)
{
    if (chat == ChatTemplate::Gemma3)
        throw std::invalid_argument("videoPrompt: Gemma 3 takes no video");
    if (chat == ChatTemplate::Gemma4)
        return gemmaChat(chat, gemmaVideo(frames, tokensPerFrame, temporalPatch, fps, markers) + question.trimmed());
    const QString pads = QString("<|video_pad|>").repeated(tokensPerFrame);
    QString block;
    if (isGlm(chat)) {
        // Each temporal patch an image span, then the time of its first frame (the processor's timestamps[::2]).
        block = "<|begin_of_video|>";
        for (int k = 0; k < frames; ++k) {
            const double seconds = static_cast<double>(k) * temporalPatch / fps;
            char stamp[48];
            if (chat == ChatTemplate::Glm41V)
                std::snprintf(stamp, sizeof stamp, "%lld", static_cast<long long>(seconds)); // int(t)
            else
                std::snprintf(stamp, sizeof stamp, "%.1f seconds", seconds);
            block += glmImage(tokensPerFrame) + QString::fromLatin1(stamp);
        }
        return glmChat(block + "<|end_of_video|>" + question);
    }
    if (chat == ChatTemplate::Qwen3VL) {
        for (int k = 0; k < frames; ++k) {
            const double seconds =
                (static_cast<double>(k) * temporalPatch + (static_cast<double>(k) * temporalPatch + temporalPatch - 1)) / 2.0 / fps;
            char stamp[48];
            std::snprintf(stamp, sizeof stamp, "<%.1f seconds>", seconds); // round half to even, as Python's format
            block += QString::fromLatin1(stamp) + "<|vision_start|>" + pads + "<|vision_end|>";
        }
    } else {
        block = "<|vision_start|>" + pads.repeated(frames) + "<|vision_end|>";
    }
    if (!tokenizer.tokenId("<|im_start|>"))
        return block + question;
    QString prompt = chat == ChatTemplate::Qwen2VL ? "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" : "";
    return prompt + "<|im_start|>user\n" + block + question + "<|im_end|>\n<|im_start|>assistant\n";
}

namespace {

// The generated ids up to the end of the turn: Qwen ends a turn with <|im_end|>; GLM-V's generation config also
// stops at <|user|> and <|observation|>; Gemma's eos_token_id lists its end of turn.
std::vector<int64_t> answerIds(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos)
{
    std::vector<int64_t> answer;
    for (int64_t id : generated) {
        if (endsTurn(tokenizer, id, eos))
            break;
        answer.push_back(id);
    }
    return answer;
}

} // namespace

bool endsTurn(const Tokenizer& tokenizer, int64_t id, int64_t eos)
{
    if (id == eos)
        return true;
    for (const char* end : {"<|im_end|>", "<|user|>", "<|observation|>", "<end_of_turn>", "<turn|>"}) // Qwen, GLM-V, Gemma 3, 4
        if (tokenizer.tokenId(end) == id)
            return true;
    return false;
}

QString answerText(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos)
{
    return tokenizer.decode(answerIds(tokenizer, generated, eos), true).trimmed();
}

QString emptyAnswerReason(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos)
{
    const std::vector<int64_t> answer = answerIds(tokenizer, generated, eos);
    if (!tokenizer.decode(answer, true).trimmed().isEmpty())
        return {};
    if (generated.empty())
        return "no token was generated";
    if (answer.empty())
        return "the model ended its turn at once: " + tokenizer.decode({generated.front()}).trimmed();
    // Tokens that decode to nothing once special tokens are dropped (markers, or blanks): say which, as the
    // tokenizer writes them.
    const QString count = QString("its %1 token%2 before the end").arg(answer.size()).arg(answer.size() == 1 ? "" : "s");
    QString shown = tokenizer.decode(answer).simplified();
    if (shown.isEmpty())
        return count + (answer.size() == 1 ? " is blank" : " are blank");
    if (shown.size() > 60)
        shown = shown.left(57) + "...";
    return count + (answer.size() == 1 ? " is special: " : " are special or blank: ") + shown;
}

} // namespace ropescope::model

#include "core/model/engine/tokenizer.h"

#include "core/io/input_file.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>

namespace ropescope::model {

struct Tokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

namespace {

constexpr int64_t kMaxVocab = 4'000'000;

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

[[noreturn]] void bad(const QString& name, const std::string& why)
{
    throw BadInputFile(name.toStdString() + ": " + why);
}

} // namespace

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

Tokenizer Tokenizer::fromJson(const QByteArray& json, const QString& name)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (doc.isNull() || !doc.isObject())
        bad(name, "not a JSON object (" + error.errorString().toStdString() + ")");
    const QJsonObject root = doc.object();
    Tokenizer t;

    const QJsonObject model = root["model"].toObject();
    const QString type = model["type"].toString();
    if (type == "BPE")
        t.model_ = Model::Bpe;
    else if (type == "WordLevel")
        t.model_ = Model::WordLevel;
    else
        bad(name, "unsupported tokenizer model '" + type.toStdString() + "' (BPE or WordLevel)");

    const QJsonObject vocab = model["vocab"].toObject();
    if (vocab.isEmpty() || vocab.size() > kMaxVocab)
        bad(name, "model.vocab must be a non-empty object of at most 4M tokens");
    int64_t maxId = -1;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        const double id = it.value().toDouble(-1);
        if (!it.value().isDouble() || id < 0 || id >= kMaxVocab || id != static_cast<double>(static_cast<int64_t>(id)))
            bad(name, "vocab id of '" + it.key().toStdString() + "' is not a valid id");
        t.vocab_[it.key().toStdString()] = static_cast<int64_t>(id);
        maxId = std::max(maxId, static_cast<int64_t>(id));
    }
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
    for (const auto& [token, id] : t.vocab_)
        t.idToToken_[static_cast<size_t>(id)] = token;
    for (const AddedToken& a : t.added_) {
        t.idToToken_[static_cast<size_t>(a.id)] = a.content;
        t.isSpecial_[static_cast<size_t>(a.id)] = a.special;
    }
    // Longest first, so overlapping added tokens match leftmost-longest.
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });

    if (t.model_ == Model::Bpe) {
        const QJsonArray merges = model["merges"].toArray();
        int rank = 0;
        for (const QJsonValue& m : merges) {
            std::string left, right;
            if (m.isString()) {
                const QString s = m.toString();
                const auto space = s.indexOf(' ');
                if (space <= 0)
                    bad(name, "merge '" + s.toStdString() + "' is not 'left right'");
                left = s.left(space).toStdString();
                right = s.mid(space + 1).toStdString();
            } else if (m.isArray() && m.toArray().size() == 2) {
                left = m.toArray()[0].toString().toStdString();
                right = m.toArray()[1].toString().toStdString();
            } else {
                bad(name, "merges must be 'a b' strings or [a, b] pairs");
            }
            if (!t.vocab_.count(left) || !t.vocab_.count(right) || !t.vocab_.count(left + right))
                bad(name, "merge '" + left + " " + right + "' uses a token missing from the vocab");
            t.mergeRanks_.emplace(left + ' ' + right, rank++);
        }
    } else {
        const QString unk = model["unk_token"].toString();
        if (!unk.isEmpty()) {
            if (!t.vocab_.count(unk.toStdString()))
                bad(name, "unk_token '" + unk.toStdString() + "' is not in the vocab");
            t.unk_ = t.vocab_.at(unk.toStdString());
        }
    }

    // Normalizers and pre-tokenizers: the ones Qwen and the bundled models use.
    std::vector<QJsonObject> normalizers;
    const QJsonObject norm = root["normalizer"].toObject();
    if (norm["type"].toString() == "Sequence")
        for (const QJsonValue& n : norm["normalizers"].toArray())
            normalizers.push_back(n.toObject());
    else if (!norm.isEmpty())
        normalizers.push_back(norm);
    for (const QJsonObject& n : normalizers) {
        const QString nt = n["type"].toString();
        if (nt == "NFC")
            t.nfc_ = true;
        else if (nt == "Lowercase")
            t.lowercase_ = true;
        else
            bad(name, "unsupported normalizer '" + nt.toStdString() + "'");
    }
    std::vector<QJsonObject> pre;
    const QJsonObject p = root["pre_tokenizer"].toObject();
    if (p["type"].toString() == "Sequence")
        for (const QJsonValue& x : p["pretokenizers"].toArray())
            pre.push_back(x.toObject());
    else if (!p.isEmpty())
        pre.push_back(p);
    for (const QJsonObject& x : pre) {
        const QString pt = x["type"].toString();
        if (pt == "ByteLevel") {
            t.byteLevel_ = true;
            if (x["use_regex"].toBool(true) && !t.split_)
                bad(name, "ByteLevel with use_regex needs GPT-2's regex; not supported, use an explicit Split");
        } else if (pt == "Split") {
            const QString pattern = x["pattern"].toObject()["Regex"].toString();
            if (pattern.isEmpty() || x["behavior"].toString() != "Isolated" || x["invert"].toBool())
                bad(name, "only Split with a Regex pattern, behavior Isolated, invert false is supported");
            int code = 0;
            PCRE2_SIZE offset = 0;
            const QByteArray utf8 = pattern.toUtf8();
            auto regex = std::make_unique<Regex>();
            regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(utf8.constData()), static_cast<PCRE2_SIZE>(utf8.size()),
                                        PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
            if (!regex->code)
                bad(name, "pre-tokenizer regex does not compile at offset " + std::to_string(offset));
            pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE); // optional speed-up; falls back silently
            t.split_ = std::move(regex);
        } else if (pt == "Whitespace" || pt == "WhitespaceSplit") {
            t.whitespaceSplit_ = true;
        } else {
            bad(name, "unsupported pre-tokenizer '" + pt.toStdString() + "'");
        }
    }
    return t;
}

std::optional<int64_t> Tokenizer::tokenId(const std::string& token) const
{
    for (const AddedToken& a : added_)
        if (a.content == token)
            return a.id;
    if (const auto it = vocab_.find(token); it != vocab_.end())
        return it->second;
    return std::nullopt;
}

void Tokenizer::bpe(const std::string& word, std::vector<int64_t>& out) const
{
    if (const auto it = cache_.find(word); it != cache_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
    }
    std::vector<std::string> parts = characters(word);
    // Merge the lowest-ranked adjacent pair until none is in the merge table.
    for (;;) {
        int best = INT_MAX;
        size_t at = 0;
        for (size_t i = 0; i + 1 < parts.size(); ++i) {
            const auto it = mergeRanks_.find(parts[i] + ' ' + parts[i + 1]);
            if (it != mergeRanks_.end() && it->second < best) {
                best = it->second;
                at = i;
            }
        }
        if (best == INT_MAX)
            break;
        const std::string left = parts[at], right = parts[at + 1];
        std::vector<std::string> merged;
        merged.reserve(parts.size());
        for (size_t i = 0; i < parts.size(); ++i) {
            if (i + 1 < parts.size() && parts[i] == left && parts[i + 1] == right) {
                merged.push_back(left + right);
                ++i;
            } else {
                merged.push_back(parts[i]);
            }
        }
        parts = std::move(merged);
    }
    std::vector<int64_t> ids;
    for (const std::string& p : parts) {
        const auto it = vocab_.find(p);
        if (it != vocab_.end())
            ids.push_back(it->second);
        else if (unk_)
            ids.push_back(*unk_);
    }
    if (cache_.size() < 100000)
        cache_.emplace(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
}

void Tokenizer::encodePiece(const std::string& piece, std::vector<int64_t>& out, std::vector<std::string>* unknown) const
{
    // Pre-tokenize into words.
    std::vector<std::string> words;
    if (split_) {
        pcre2_match_data* match = pcre2_match_data_create_from_pattern(split_->code, nullptr);
        PCRE2_SIZE start = 0, last = 0;
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
        while (start <= piece.size()) {
            const int rc = pcre2_match(split_->code, subject, piece.size(), start, 0, match, nullptr);
            if (rc < 0)
                break;
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
            if (ov[0] > last)
                words.push_back(piece.substr(last, ov[0] - last)); // unmatched text stays a piece (Isolated)
            if (ov[1] > ov[0])
                words.push_back(piece.substr(ov[0], ov[1] - ov[0]));
            last = ov[1];
            start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
            while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80)
                ++start; // never restart inside a UTF-8 character
        }
        if (last < piece.size())
            words.push_back(piece.substr(last));
        pcre2_match_data_free(match);
    } else if (whitespaceSplit_) {
        std::string current;
        for (char c : piece) {
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                if (!current.empty())
                    words.push_back(current);
                current.clear();
            } else {
                current += c;
            }
        }
        if (!current.empty())
            words.push_back(current);
    } else {
        words.push_back(piece);
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
        words << QString::fromStdString(w);
    words.removeDuplicates();
    return words;
}

std::vector<int64_t> Tokenizer::encode(const QString& text, std::vector<std::string>* unknown) const
{
    const std::string raw = text.toStdString();
    std::vector<int64_t> out;
    // Added tokens split the raw text first (leftmost, longest); the pieces between are normalised.
    size_t pos = 0;
    while (pos <= raw.size()) {
        size_t bestAt = std::string::npos;
        const AddedToken* best = nullptr;
        for (const AddedToken& a : added_) {
            const size_t at = raw.find(a.content, pos);
            if (at != std::string::npos && (at < bestAt || (at == bestAt && best && a.content.size() > best->content.size()))) {
                bestAt = at;
                best = &a;
            }
        }
        const size_t end = best ? bestAt : raw.size();
        if (end > pos) {
            QString piece = QString::fromUtf8(raw.data() + pos, static_cast<qsizetype>(end - pos));
            if (nfc_)
                piece = piece.normalized(QString::NormalizationForm_C);
            if (lowercase_)
                piece = piece.toLower();
            encodePiece(piece.toStdString(), out, unknown);
        }
        if (!best)
            break;
        out.push_back(best->id);
        pos = bestAt + best->content.size();
    }
    return out;
}

QString Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const
{
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
        const bool added = std::any_of(added_.begin(), added_.end(), [id](const AddedToken& a) { return a.id == id; });
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
    return QString::fromUtf8(bytes.data(), static_cast<qsizetype>(bytes.size()));
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

QString imagePrompt(const Tokenizer& tokenizer, const QString& question, const std::vector<int>& imageTokens, ChatTemplate chat)
{
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
                    ChatTemplate chat, double fps)
{
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
// stops at <|user|> and <|observation|>.
std::vector<int64_t> answerIds(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos)
{
    const auto imEnd = tokenizer.tokenId("<|im_end|>"), user = tokenizer.tokenId("<|user|>"),
               observation = tokenizer.tokenId("<|observation|>");
    std::vector<int64_t> answer;
    for (int64_t id : generated) {
        if (id == eos || imEnd == id || user == id || observation == id)
            break;
        answer.push_back(id);
    }
    return answer;
}

} // namespace

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

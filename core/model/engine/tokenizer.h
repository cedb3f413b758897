#pragma once
#include "core/model/engine/safetensors.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ropescope::model {

// A Hugging Face tokenizer.json: BPE or WordLevel, with added/special tokens split out first (leftmost,
// longest). BPE: byte-level (Qwen2's pre-tokenizer regex run by PCRE2 with UTF+UCP) or on characters with
// byte fallback (<0xNN> tokens, Gemma's SentencePiece-style vocabulary); merges as "a b" strings or [a, b]
// pairs, applied lowest rank first. Normalizers NFC, NFKC, Lowercase, Replace and Prepend, in the file's order;
// pre-tokenizers Split (regex or string), Whitespace(Split) and ByteLevel; decoders ByteLevel or a chain of
// Replace, ByteFallback, Fuse and Strip. Parsing is bounds-checked: ids out of range, merges of unknown
// tokens, oversized vocabularies, unsupported steps and malformed JSON are errors.
class Tokenizer {
public:
    static Tokenizer load(const QString& path);
    static Tokenizer fromJson(const QByteArray& json, const QString& name);

    std::vector<int64_t> encode(const QString& text) const;
    // Words of `text` a WordLevel vocabulary lacks (read as its unk token, or dropped when it has none),
    // each once, in order. Byte-level BPE can spell anything: empty.
    QStringList unknownWords(const QString& text) const;
    // Text of the ids; special tokens are kept unless skipSpecial.
    QString decode(const std::vector<int64_t>& ids, bool skipSpecial = false) const;
    std::optional<int64_t> tokenId(const std::string& token) const;
    // The token an id stands for as the vocabulary (or an added token) spells it; nullopt for an id it lacks.
    std::optional<std::string> tokenText(int64_t id) const;

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // Parsing and running steps (tokenizer.cpp); public only so that the file's helpers can name them.
    struct Regex;
    struct Steps;
    struct Merge {
        int rank = 0;
        int64_t merged = 0;
    };

private:
    Tokenizer();
    struct AddedToken {
        std::string content;
        int64_t id = 0;
        bool special = false;
    };

    std::vector<int64_t> encode(const QString& text, std::vector<std::string>* unknown) const;
    void encodePiece(const std::string& piece, std::vector<int64_t>& out, std::vector<std::string>* unknown) const;
    void bpe(const std::string& word, std::vector<int64_t>& out) const;
    void spell(const std::string& symbol, std::vector<int64_t>& out) const;
    const AddedToken* addedTokenAt(const std::string& text, size_t pos) const;
    std::string decodeChain(const std::vector<int64_t>& ids, bool skipSpecial) const;

    enum class Model { Bpe, WordLevel } model_ = Model::Bpe;
    bool byteLevel_ = false;
    bool byteFallback_ = false, fuseUnk_ = false, ignoreMerges_ = false;
    std::unique_ptr<Steps> steps_; // normalizers, pre-tokenizers, decoders
    std::unordered_map<std::string, int64_t> vocab_;
    std::unordered_map<uint64_t, Merge> merges_; // (left id << 32 | right id) -> rank and merged id
    std::array<int64_t, 256> byteTokens_{};      // <0xNN> ids, -1 where the vocab lacks one
    std::vector<std::string> idToToken_;
    std::vector<AddedToken> added_;
    std::unordered_map<std::string, size_t> addedIndex_; // content -> index in added_
    std::vector<size_t> addedLengths_;                   // distinct content lengths, longest first
    std::array<bool, 256> addedFirstByte_{};             // bytes an added token starts with
    std::vector<bool> isSpecial_, isAdded_;
    std::optional<int64_t> unk_;
    mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

// Qt 6.4's JSON parser drops a U+FEFF (byte order mark) that starts a raw UTF-8 string, key or value (Gemma's
// vocab has both "\ufeff" and "\ufeff\ufeff", which then collided); the same character written as an escape
// is kept. This writes every raw one (EF BB BF is only ever that character, and only inside a string) as
// "\ufeff", after dropping a document's leading mark. Pass JSON text through it before QJsonDocument::fromJson.
QByteArray escapeByteOrderMarks(QByteArray json);

// Which chat template: Qwen2/2.5-VL's adds the default system turn "You are a helpful assistant.";
// Qwen3-VL's has none unless the conversation brings one. GLM-4.1V's and GLM-4.6V's ("[gMASK]<sop><|user|>\n"
// ... "<|assistant|>\n", images as <|begin_of_image|> <|image|> x tokens <|end_of_image|>) differ only in
// the timestamp text after each video frame: "{int(t)}" and "{t:.1f} seconds".
// PaddleOCR-VL's: "<|begin_of_sentence|>User: " ... "\nAssistant:\n", images as <|IMAGE_START|>
// <|IMAGE_PLACEHOLDER|> x tokens <|IMAGE_END|> (no video).
// Gemma 3's: "<bos><start_of_turn>user\n" ... "<end_of_turn>\n<start_of_turn>model\n", the question trimmed, each image
// as Gemma3Processor expands the template's <start_of_image>: "\n\n<start_of_image>" <image_soft_token> x tokens
// "<end_of_image>\n\n" (no video). Gemma 4's (inferred from its processor and tokenizer's turn tokens; the Hub's
// chat_template.jinja is not read): "<bos><|turn>user\n" ... "<turn|>\n<|turn>model\n", each image as Gemma4Processor
// writes it, "<|image>" <|image|> x tokens "<image|>"; a video's frames "mm:ss <|image><|video|> x tokens<image|>"
// joined by spaces.
enum class ChatTemplate { Qwen2VL, Qwen3VL, Glm41V, Glm46V, PaddleOcrVl, Gemma3, Gemma4 };

inline bool isGemmaTemplate(ChatTemplate chat)
{
    return chat == ChatTemplate::Gemma3 || chat == ChatTemplate::Gemma4;
}

// The tokens a Gemma prompt writes its images (and Gemma 4's video frames) with: `image` the soft token, `begin` and
// `end` the markers around each image. An empty field takes the Hub's name (Gemma 3: <image_soft_token>,
// <start_of_image>, <end_of_image>; Gemma 4: <|image|>, <|image>, <image|>, <|video|>). prepareAttention passes the
// tokenizer's own texts of the config's ids, so a tokenizer and a config always agree. Other templates ignore them.
struct VisionMarkers {
    QString image, begin, end, video;
};
VisionMarkers defaultVisionMarkers(ChatTemplate chat);

// The Qwen chat prompt for one user turn with `images` images (each as <|vision_start|>
// <|image_pad|> x tokens <|vision_end|>, tokens per image given), then the assistant header.
QString qwenChatPrompt(const QString& question, const std::vector<int>& imageTokens, ChatTemplate chat = ChatTemplate::Qwen2VL);

// The prompt for images and a question: the Qwen chat template when the tokenizer has <|im_start|>,
// else the bundled models' plain form (<|vision_start|> <|image_pad|> x tokens <|vision_end|>) per image, then the question.
QString imagePrompt(const Tokenizer& tokenizer, const QString& question, const std::vector<int>& imageTokens,
                    ChatTemplate chat = ChatTemplate::Qwen2VL, const VisionMarkers& markers = {});

// The prompt for one video of `frames` temporal patches (`tokensPerFrame` merged tokens each) and a question,
// in the same two forms. Qwen2/2.5-VL: one <|vision_start|> <|video_pad|> x all tokens <|vision_end|>.
// Qwen3-VL: each temporal patch as "<t seconds>" <|vision_start|> <|video_pad|> x tokens <|vision_end|>, t the
// mean time of its first and last frame with frames sampled at `fps` (its processor's "%.1f").
// Gemma 4: each temporal patch (one frame) after its time of its first frame as "mm:ss " (int minutes, int seconds),
// the frames joined by spaces. Gemma 3 takes no video (std::invalid_argument).
QString videoPrompt(const Tokenizer& tokenizer, const QString& question, int frames, int tokensPerFrame, int temporalPatch,
                    ChatTemplate chat = ChatTemplate::Qwen2VL, double fps = 2.0, const VisionMarkers& markers = {});

// The answer text of greedily generated ids: up to the first `eos`, <|im_end|>, <|user|>, <|observation|> or the end
// of Gemma's turn (<end_of_turn>, <turn|>), special tokens dropped.
QString answerText(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos);
// Whether `id` ends the answer's turn as answerText reads it (`eos` or one of the turn ends above).
bool endsTurn(const Tokenizer& tokenizer, int64_t id, int64_t eos);
// Why answerText is empty, in a few words for the window ("the model ended its turn at once: <|im_end|>");
// empty when it is not.
QString emptyAnswerReason(const Tokenizer& tokenizer, const std::vector<int64_t>& generated, int64_t eos);

} // namespace ropescope::model

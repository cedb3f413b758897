// The tokenizer.json steps Gemma's vocabulary needs, on small hand-made files (no download): a Replace
// normalizer, Split with a string pattern and each delimiter behaviour, BPE merges as [a, b] pairs or "a b"
// strings (a token may hold a space), byte fallback with fused unknowns, ignore_merges, the decoder chain
// (Replace, ByteFallback, Fuse, Strip), and tokens that start with U+FEFF, which Qt's JSON parser used to drop.
// The real 262k vocabulary is checked against transformers.js in tests/cli/test_gemma_tokenizer.cpp.
#include "core/model/engine/tokenizer.h"

#include <QtTest>

using namespace ropescope::model;

namespace {

const QByteArray kBom = "\xEF\xBB\xBF"; // U+FEFF as raw UTF-8, as Gemma's file writes it

// A Gemma-like tokenizer: spaces become U+2581, one BPE word per section, byte fallback, fused unknowns.
QByteArray gemmaLike(const QByteArray& extraModel = "")
{
    return R"({"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
      "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                  {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
      "added_tokens": [{"id": 9, "content": "<bos>", "special": true}, {"id": 10, "content": "<b>", "special": false}],
      "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true, )" +
        extraModel + R"(
        "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "▁": 4, "▁ab": 5, "<0xC3>": 6, "<0xA9>": 7, "<0x0D>": 8,
                  "<bos>": 9, "<b>": 10, ")" +
        kBom + R"(": 11, ")" + kBom + kBom + R"(": 12},
        "merges": [["a", "b"], ["▁", "ab"], [")" +
        kBom + R"(", ")" + kBom + R"("]]}})";
}

std::vector<int64_t> ids(std::initializer_list<int64_t> l)
{
    return l;
}

// A WordLevel tokenizer whose only step is Split on "-" with `behavior`: its pieces show as unknown words.
QStringList piecesOf(const QString& text, const QString& behavior)
{
    const QByteArray json = R"({"pre_tokenizer": {"type": "Split", "pattern": {"String": "-"}, "behavior": ")" + behavior.toUtf8() +
        R"(", "invert": false}, "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}})";
    return Tokenizer::fromJson(json, "split.json").unknownWords(text);
}

} // namespace

class TestTokenizerSteps : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Spaces become U+2581 before BPE, so "ab ab" is one word: a+b first (rank 0), then U+2581+ab.
    void replaceNormalizerThenMerges()
    {
        const Tokenizer t = Tokenizer::fromJson(gemmaLike(), "gemma-like.json");
        QCOMPARE(t.encode("ab ab"), ids({3, 5}));
        QCOMPARE(t.encode(" ab"), ids({5}));
        QCOMPARE(t.encode("<bos>ab<b> ab"), ids({9, 3, 10, 5})); // added tokens split the raw text first
        QCOMPARE(t.encode(""), ids({}));
    }

    // Characters the vocab lacks are spelled as <0xNN> tokens when all their bytes have one, else <unk>;
    // neighbouring unknowns in a word fuse into one <unk>.
    void byteFallbackAndFusedUnknowns()
    {
        const Tokenizer t = Tokenizer::fromJson(gemmaLike(), "gemma-like.json");
        QCOMPARE(t.encode(QString::fromUtf8("\xC3\xA9\r")), ids({6, 7, 8}));
        QCOMPARE(t.encode("xyz"), ids({0}));
        QCOMPARE(t.encode("xaz"), ids({0, 1, 0}));
    }

    // The decoder chain: U+2581 back to spaces, byte runs back to UTF-8, fused, one leading space stripped.
    void decoderChain()
    {
        const Tokenizer t = Tokenizer::fromJson(gemmaLike(), "gemma-like.json");
        QCOMPARE(t.decode(ids({3, 5})), QString("ab ab"));
        QCOMPARE(t.decode(ids({5})), QString("ab")); // Strip start 1
        QCOMPARE(t.decode(ids({3, 6, 7, 8, 4})), QString::fromUtf8("ab\xC3\xA9\r "));
        QCOMPARE(t.decode(ids({9, 3, 10})), QString("<bos>ab<b>"));
        QCOMPARE(t.decode(ids({9, 3, 10}), true), QString("ab<b>")); // <b> is added but not special
        QCOMPARE(t.decode(ids({6})), QString(QChar(0xFFFD)));        // half a character
    }

    // Strip removes whole characters, a multi-byte one too (U+2581 is three bytes of UTF-8).
    void stripMultiByteCharacter()
    {
        const QByteArray json = R"({"decoder": {"type": "Strip", "content": "▁", "start": 1, "stop": 1},
            "model": {"type": "BPE", "vocab": {"▁ab": 0, "▁": 1, "▁▁": 2, "▀": 3}, "merges": []}})";
        const Tokenizer t = Tokenizer::fromJson(json, "strip.json");
        QCOMPARE(t.decode(ids({0, 1, 2})), QString("ab"));    // "▁" and "▁▁" lose one at each end: nothing is left
        QCOMPARE(t.decode(ids({3})), QString(QChar(0x2580))); // same first byte, another character
    }

    // Gemma's vocab has both U+FEFF and U+FEFF U+FEFF as raw UTF-8; Qt's parser dropped the first mark of each,
    // so the two collided and the merge of two marks was refused ("uses a token missing from the vocab").
    void byteOrderMarkTokensStayDistinct()
    {
        const Tokenizer t = Tokenizer::fromJson(kBom + gemmaLike(), "gemma-like.json"); // a document mark too
        QCOMPARE(t.tokenId(kBom.toStdString()).value_or(-1), int64_t(11));
        QCOMPARE(t.tokenId((kBom + kBom).toStdString()).value_or(-1), int64_t(12));
        const QString mark(QChar(0xFEFF)); // QString::fromUtf8 would drop a leading one
        QCOMPARE(t.encode(mark + mark + "ab"), ids({12, 3}));
        QCOMPARE(t.decode(ids({11, 3})), mark + "ab");
        QCOMPARE(t.decode(ids({12})), mark + mark);
        QCOMPARE(escapeByteOrderMarks(kBom + "[\"" + kBom + "\"]"), QByteArray("[\"\\ufeff\"]"));
    }

    // With ignore_merges a word the vocab holds whole is that token, whatever the merges would make of it.
    void ignoreMerges()
    {
        const QByteArray base = R"({"model": {"type": "BPE", %1 "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "abc": 4}, "merges": ["b c"]}})";
        QCOMPARE(Tokenizer::fromJson(QByteArray(base).replace("%1", ""), "m.json").encode("abc"), ids({0, 3}));
        QCOMPARE(Tokenizer::fromJson(QByteArray(base).replace("%1", R"("ignore_merges": true,)"), "m.json").encode("abc"), ids({4}));
    }

    // Equal ranks merge leftmost first, over a long word too (the heap keeps it n log n).
    void leftmostFirstOnLongWords()
    {
        const Tokenizer t =
            Tokenizer::fromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": [["a", "a"]]}})", "a.json");
        QCOMPARE(t.encode("aaa"), ids({1, 0}));
        const std::vector<int64_t> long_ = t.encode(QString(100001, 'a'));
        QCOMPARE(long_.size(), size_t(50001));
        QCOMPARE(long_.back(), int64_t(0));
    }

    // A merge string is split at its space; where a token holds a space, the one split into known tokens counts.
    void mergeStringsWithSpaces()
    {
        // "  y" is (" ", "y"); "x  y" could be ("x", " y") or ("x ", "y"), and only the first names tokens.
        const QByteArray json =
            R"({"model": {"type": "BPE", "vocab": {"x": 0, " y": 1, "x y": 2, "y": 3, " ": 4}, "merges": ["  y", "x  y"]}})";
        QCOMPARE(Tokenizer::fromJson(json, "s.json").encode("x y"), ids({2}));
        const QByteArray pairs =
            R"({"model": {"type": "BPE", "vocab": {"x": 0, " y": 1, "x y": 2, "y": 3, " ": 4}, "merges": [[" ", "y"], ["x", " y"]]}})";
        QCOMPARE(Tokenizer::fromJson(pairs, "p.json").encode("x y"), ids({2}));
        const QByteArray ambiguous =
            R"({"model": {"type": "BPE", "vocab": {"x": 0, " y": 1, "x ": 2, "y": 3, "x y": 4}, "merges": ["x  y"]}})";
        QVERIFY_THROWS_EXCEPTION(BadInputFile, Tokenizer::fromJson(ambiguous, "amb.json"));
        try {
            Tokenizer::fromJson(ambiguous, "amb.json");
        } catch (const BadInputFile& e) {
            QCOMPARE(QString(e.what()), QString("amb.json: merge 'x  y' splits into known tokens in more than one way"));
        }
        try {
            Tokenizer::fromJson(R"({"model": {"type": "BPE", "vocab": {"x": 0}, "merges": [["x", "q"]]}})", "m.json");
            QFAIL("a merge of an unknown token was accepted");
        } catch (const BadInputFile& e) {
            QCOMPARE(QString(e.what()), QString("m.json: merge 'x q' uses a token missing from the vocab"));
        }
    }

    // Hugging Face's SplitDelimiterBehavior on "the-final--countdown".
    void splitBehaviours()
    {
        const QString text = "the-final--countdown";
        QCOMPARE(piecesOf(text, "Removed"), QStringList({"the", "final", "countdown"}));
        QCOMPARE(piecesOf(text, "Isolated"), QStringList({"the", "-", "final", "countdown"})); // "-" listed once
        QCOMPARE(piecesOf(text, "MergedWithPrevious"), QStringList({"the-", "final-", "-", "countdown"}));
        QCOMPARE(piecesOf(text, "MergedWithNext"), QStringList({"the", "-final", "-", "-countdown"}));
        QCOMPARE(piecesOf(text, "Contiguous"), QStringList({"the", "-", "final", "--", "countdown"}));
    }

    // Steps this tokenizer cannot run are refused by name, not skipped.
    void unsupportedStepsAreNamed()
    {
        auto refusal = [](const QByteArray& json) {
            try {
                Tokenizer::fromJson(json, "t.json");
            } catch (const BadInputFile& e) {
                return QString(e.what());
            }
            return QString("accepted");
        };
        const QByteArray model = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
        QCOMPARE(refusal("{\"decoder\": {\"type\": \"WordPiece\"}, " + model + "}"),
                 QString("t.json: unsupported decoder 'WordPiece' (ByteLevel, Replace, ByteFallback, Fuse, Strip)"));
        QCOMPARE(refusal("{\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\"}, \"content\": \" \"}, " + model + "}"),
                 QString("t.json: normalizer Replace needs a non-empty String pattern and a content string"));
        QCOMPARE(
            refusal("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Sideways\"}, " + model +
                    "}"),
            QString("t.json: Split needs a behavior (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous) and invert false"));
        QCOMPARE(refusal("{\"decoder\": {\"type\": \"Strip\", \"content\": \" \", \"start\": -1, \"stop\": 0}, " + model + "}"),
                 QString("t.json: decoder Strip needs a one-character content and start/stop counts from 0 to 1000"));
    }
};

QTEST_APPLESS_MAIN(TestTokenizerSteps)
#include "test_tokenizer_steps.moc"

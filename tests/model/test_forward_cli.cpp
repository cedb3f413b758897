// `ropescope forward` from the command line: outputs against the transformers fixtures, the positions it
// used against `ropescope positions`, and its errors.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <QJsonArray>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/model/engine/tensor_io.h"
#include "tests/support/csv_table.h"
#include "tests/support/run_ropescope.h"
#include "kernels/linear_few_rows.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>
#include <torch/cuda.h>

#include <cmath>
#include <limits>
#include <functional>
#include <map>
#endif

using namespace ropescope::model;

namespace {

QString fixture(const QString& path)
{
    return QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + path;
}

double maxAbs(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

using Tensors = std::map<std::string, torch::Tensor>;

Tensors readTensors(const QString& path)
{
    const SafeTensors st = SafeTensors::open(path);
    Tensors out;
    for (const TensorInfo& t : st.tensors())
        out[t.name] = toTorch(st, t.name).contiguous();
    return out;
}

bool writeTensors(const QString& path, const Tensors& tensors)
{
    SafeTensorsWriter w;
    for (const auto& [name, t] : tensors) {
        const DType d = t.scalar_type() == torch::kInt64 ? DType::I64 : t.scalar_type() == torch::kInt32 ? DType::I32 : DType::F32;
        const torch::Tensor c = d == DType::F32 ? t.to(torch::kFloat32).contiguous() : t.contiguous();
        w.add(name, d, c.sizes().vec(), c.data_ptr(), static_cast<size_t>(c.nbytes()));
    }
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(w.bytes()) > 0;
}

// A copy of a fixture's folder with its config.json changed by `edit` (and, when asked, without lm_head.weight).
QString editedModel(const QString& dir, const std::function<void(QJsonObject&)>& edit, bool dropHead = false,
                    const QString& source = "qwen2vl-tiny")
{
    QDir().mkpath(dir);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"})
        QFile::copy(fixture(source + "/" + f), dir + "/" + f);
    QFile c(dir + "/config.json");
    c.open(QIODevice::ReadOnly);
    QJsonObject config = QJsonDocument::fromJson(c.readAll()).object();
    c.close();
    edit(config);
    c.open(QIODevice::WriteOnly | QIODevice::Truncate);
    c.write(QJsonDocument(config).toJson());
    c.close();
    if (dropHead) {
        Tensors weights = readTensors(dir + "/model.safetensors");
        weights.erase("lm_head.weight");
        QFile::remove(dir + "/model.safetensors");
        writeTensors(dir + "/model.safetensors", weights);
    }
    return dir;
}

} // namespace

class TestForwardCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesFixtures_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("qwen2vl") << "qwen2vl-tiny";
        QTest::newRow("qwen25vl") << "qwen25vl-tiny";
        QTest::newRow("qwen3vl") << "qwen3vl-tiny";
        QTest::newRow("qwen35") << "qwen35-tiny";
        QTest::newRow("glm4v") << "glm4v-tiny";
        QTest::newRow("paddleocr-vl") << "paddleocr-vl-tiny";
    }
    void matchesFixtures()
    {
        QFETCH(QString, model);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.safetensors");
        const auto r =
            runRopescope({"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"), "--output", out});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const SafeTensors got = SafeTensors::open(out);
        const SafeTensors want = SafeTensors::open(fixture(model + "/expected_multi.safetensors"));
        QVERIFY(torch::equal(toTorch(got, "position_ids"), toTorch(want, "position_ids")));
        QVERIFY(torch::equal(toTorch(got, "rope_deltas"), toTorch(want, "rope_deltas")));
        QVERIFY(torch::equal(toTorch(got, "generated_ids"), toTorch(want, "generated_ids")));
        // Qwen3.5's fixture README: about 10x looser than the others (the DeltaNet's gated norm amplifies float32 noise).
        const bool qwen35 = model == "qwen35-tiny";
        const double outputs = qwen35 ? 3e-4 : 1e-4, attention = qwen35 ? 5e-5 : 1e-5;
        QVERIFY(maxAbs(toTorch(got, "logits"), toTorch(want, "logits")) < outputs);
        QVERIFY(maxAbs(toTorch(got, "image_embeds"), toTorch(want, "image_embeds")) < 1e-4);
        // Qwen3.5: the full-attention layers only, in layer order, as transformers returns them.
        QVERIFY(toTorch(got, "attentions").sizes() == toTorch(want, "attentions").sizes());
        QVERIFY(maxAbs(toTorch(got, "attentions"), toTorch(want, "attentions")) < attention);
        if (want.find("generated_logits"))
            QVERIFY(maxAbs(toTorch(got, "generated_logits"), toTorch(want, "generated_logits")) < outputs);
        for (const char* name : {"deltanet_g", "deltanet_beta", "deltanet_core_outputs", "deltanet_recurrent_states",
                                 "deltanet_conv_states", "full_attention_layer_indexes", "linear_attention_layer_indexes"}) {
            QCOMPARE(got.find(name) != nullptr, want.find(name) != nullptr);
            if (want.find(name))
                QVERIFY2(maxAbs(toTorch(got, name), toTorch(want, name)) < 1e-4, name);
        }
        QCOMPARE(got.find("deepstack_embeds") != nullptr, want.find("deepstack_embeds") != nullptr);
        if (want.find("deepstack_embeds"))
            QVERIFY(maxAbs(toTorch(got, "deepstack_embeds"), toTorch(want, "deepstack_embeds")) < 1e-4);
        // Every tensor forward writes is named as the fixture names it, and holds what the fixture does.
        // (The older fixtures lack some: Qwen3-VL's has no generated_logits, the 4.50 ones no generate_position_ids.)
        for (const TensorInfo& t : got.tensors()) {
            const bool older = model != "glm4v-tiny" && model != "qwen35-tiny" && model != "paddleocr-vl-tiny";
            QVERIFY2(want.find(t.name) || older, t.name.c_str());
            if (want.find(t.name))
                QVERIFY2(toTorch(got, t.name).sizes() == toTorch(want, t.name).sizes(), t.name.c_str());
        }
        for (const char* name : {"inputs_embeds", "decoder_layer_outputs", "final_norm_output"})
            if (want.find(name))
                QVERIFY2(maxAbs(toTorch(got, name), toTorch(want, name)) < (qwen35 ? 3e-4 : 2e-4), name);
        if (want.find("generate_position_ids")) // transformers 5: row 0 plain, rows 1-3 the positions
            QVERIFY(torch::equal(toTorch(got, "generate_position_ids"), toTorch(want, "generate_position_ids")));
        QCOMPARE(QString::fromStdString(got.metadata().at("allocation")),
                 model == "qwen3vl-tiny"            ? QString("interleaved-mrope[6,5,5]")
                     : qwen35                       ? QString("interleaved-mrope[2,1,1]")
                     : model == "paddleocr-vl-tiny" ? QString("sectioned[4,6,6]")
                                                    : QString("sectioned[2,3,3]"));
    }

    // The bf16 path (the GPU default) on the CPU: the same model in bfloat16 stays within bf16's precision
    // of the float32 reference (8 mantissa bits: ~0.4% per rounding, accumulated over the layers).
    void bf16StaysWithinItsPrecision_data() { matchesFixtures_data(); }
    void bf16StaysWithinItsPrecision()
    {
        QFETCH(QString, model);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.safetensors");
        const auto r = runRopescope({"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"),
                                     "--output", out, "--dtype", "bf16"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const SafeTensors got = SafeTensors::open(out);
        const SafeTensors want = SafeTensors::open(fixture(model + "/expected_multi.safetensors"));
        QVERIFY(torch::equal(toTorch(got, "position_ids"), toTorch(want, "position_ids")));
        const auto logits = toTorch(want, "logits").to(torch::kFloat64);
        const double scale = logits.abs().max().item<double>();
        const double logitErr = maxAbs(toTorch(got, "logits"), logits),
                     attnErr = maxAbs(toTorch(got, "attentions"), toTorch(want, "attentions"));
        const double embedErr = maxAbs(toTorch(got, "image_embeds"), toTorch(want, "image_embeds"));
        qInfo("bf16 %s: logits max err %.4f (max |logit| %.3f), attentions %.5f, image embeds %.4f", qPrintable(model), logitErr, scale,
              attnErr, embedErr);
        // The Qwen3.5 fixture amplifies rounding about 10x more than the others (its README: float32 already
        // ends 6e-5 off after 8 layers, as the DeltaNet's gated norm scales up its small outputs), so its bf16
        // bounds are 5x wider. Measured: 16% of the largest logit, attentions 0.107, even with the DeltaNet
        // kept in float32 past its projections.
        const double loose = model == "qwen35-tiny" ? 5 : 1;
        QVERIFY(logitErr > 1e-3);                 // it did run in bf16 (float32 lands within 1e-5)
        QVERIFY(logitErr < 0.05 * loose * scale); // measured: 1.3% of the largest logit
        QVERIFY(attnErr < 0.03 * loose);          // measured: 0.010-0.014 explicit; 0.020 fused (LibTorch 2.11 CPU)
        // The argmax survives the rounding wherever the reference's top two logits are not near-tied.
        const auto top2 = std::get<0>(logits[0].topk(2, -1));
        const auto clear = (top2.select(-1, 0) - top2.select(-1, 1)) > 0.1 * scale;
        const auto agree = toTorch(got, "logits")[0].to(torch::kFloat64).argmax(-1) == logits[0].argmax(-1);
        QVERIFY(clear.sum().item<int64_t>() > 0);
        QVERIFY((agree | ~clear).all().item<bool>());
    }

    // The CUDA path, where LibTorch has CUDA and a GPU is visible (GPU machines; skipped elsewhere).
    // float32 on the GPU may use TF32 in cuDNN convolutions (the patch embedding), hence 2e-3, not 1e-4.
    // bench model on a model folder: every stage reports, the decoding steps with their first two apart, and the GEMM
    // floor's work equal to the FLOPs of the checkpoint's own decoder projections (2 x tokens x each weight's size),
    // counted here from the safetensors header, independently of the floor's own list of shapes.
    void benchModelReportsStagesAndTheGemmFloor_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("qwen2-vl: q/k/v/o, gate/up/down") << "qwen2vl-tiny";
        QTest::newRow("qwen3.5: DeltaNet projections, gated queries") << "qwen35-tiny";
        QTest::newRow("glm-4.1v: fused gate and up") << "glm4v-tiny";
    }
    void benchModelReportsStagesAndTheGemmFloor()
    {
        QFETCH(QString, model);
        const auto r = runRopescope({"bench", "model", "--model", fixture(model), "--runs", "1", "--gemm-floor", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject row = QJsonDocument::fromJson(r.out).object();
        for (const char* key : {"vision_ms", "decoder_ms", "prefill_capture_ms", "decode_step_ms", "decode_first_step_ms",
                                "decode_second_step_ms", "gemm_floor_ms", "decoder_over_gemm_floor"})
            QVERIFY2(row.value(key).toDouble() > 0, key);
        QCOMPARE(row.value("decode_graphs").toString(), QString("no (not a CUDA device)"));
        double flops = 0;
        const SafeTensors weights = SafeTensors::open(fixture(model + "/model.safetensors"));
        for (const TensorInfo& t : weights.tensors()) {
            const QString name = QString::fromStdString(t.name);
            // q_proj, gate_up_proj, in_proj_qkv, out_proj, ...: the decoder's projections (the tower's are under blocks.)
            if (name.contains("layers.") && name.endsWith(".weight") && name.section('.', -2, -2).contains("proj") && t.shape.size() == 2)
                flops += 2.0 * row.value("tokens").toDouble() * double(t.shape[0]) * double(t.shape[1]);
        }
        QVERIFY(flops > 0);
        QVERIFY(row.value("flop_limit_gflop").toDouble() > row.value("gemm_floor_gflop").toDouble());
        QVERIFY(row.value("decoder_over_flop_limit").toDouble() < row.value("decoder_over_gemm_floor").toDouble());
        QVERIFY2(
            std::abs(row.value("gemm_floor_gflop").toDouble() * 1e9 - flops) <= 1e-9 * flops,
            qPrintable(
                QString("floor %1 GFLOP, the checkpoint's projections %2").arg(row.value("gemm_floor_gflop").toDouble()).arg(flops / 1e9)));
    }

    // bench model on a MoE member: the block and the dense MLP of its active width are timed, and the report names
    // what multiplied the experts: the few-rows kernel where float32 weights were packed for it, at::linear in bf16.
    void benchModelTimesTheMoeBlockAndNamesItsKernel()
    {
        const QString fp32Kernel = ropescope::kernels::linearFewRowsAvailable()
            ? QString::fromStdString(ropescope::kernels::linearFewRowsName())
            : QString("at::linear");
        for (const auto& [dtype, kernel] : {std::pair<QString, QString>{"fp32", fp32Kernel}, {"bf16", "at::linear"}}) {
            const auto r =
                runRopescope({"bench", "model", "--model", fixture("qwen35moe-tiny"), "--runs", "1", "--dtype", dtype, "--json"});
            QVERIFY2(r.exitCode == 0, r.err.constData());
            const QJsonObject row = QJsonDocument::fromJson(r.out).object();
            QVERIFY(row.value("moe_block_ms").toDouble() > 0);
            QVERIFY(row.value("dense_mlp_active_width_ms").toDouble() > 0);
            QCOMPARE(row.value("moe_active_width").toDouble(), 2.0 * 32 + 48); // the fixture: top-2 of width 32, a shared expert of 48
            QCOMPARE(row.value("moe_expert_kernel").toString(), kernel);
        }
    }

    void cudaMatchesFixtures_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("dtype");
        // Every family the engine runs (issue 57 item 4; it covered the first three).
        for (const char* m : {"qwen2vl-tiny", "qwen25vl-tiny", "qwen3vl-tiny", "qwen35-tiny", "glm4v-tiny", "paddleocr-vl-tiny"})
            for (const char* t : {"fp32", "bf16"})
                QTest::newRow(qPrintable(QString("%1 %2").arg(m, t))) << QString(m) << QString(t);
        // The MoE members in float32 (bf16 rounding may move a token to another expert: no bound holds then).
        for (const char* m : {"qwen35moe-tiny", "qwen3vlmoe-tiny", "glm4vmoe-tiny"})
            QTest::newRow(qPrintable(QString("%1 fp32").arg(m))) << QString(m) << QString("fp32");
    }
    void cudaMatchesFixtures()
    {
        if (!torch::cuda::is_available())
            QSKIP("no CUDA here (Debian's LibTorch is CPU-only, or no GPU is visible): this runs on GPU machines");
        QFETCH(QString, model);
        QFETCH(QString, dtype);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.safetensors");
        const auto r = runRopescope({"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"),
                                     "--output", out, "--device", "cuda", "--dtype", dtype});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const SafeTensors got = SafeTensors::open(out);
        const SafeTensors want = SafeTensors::open(fixture(model + "/expected_multi.safetensors"));
        QVERIFY(torch::equal(toTorch(got, "position_ids"), toTorch(want, "position_ids")));
        const auto logits = toTorch(want, "logits");
        const double scale = logits.abs().max().item<double>();
        const double logitErr = maxAbs(toTorch(got, "logits"), logits);
        qInfo("cuda %s %s: logits max err %.6f", qPrintable(model), qPrintable(dtype), logitErr);
        if (dtype == "fp32") {
            QVERIFY(logitErr < 2e-3);
            QVERIFY(maxAbs(toTorch(got, "attentions"), toTorch(want, "attentions")) < 1e-3);
            QVERIFY(torch::equal(toTorch(got, "generated_ids"), toTorch(want, "generated_ids")));
            // The steps after the second replay a CUDA graph: their logits, where the fixture has them.
            if (want.find("generated_logits")) {
                const double stepErr = maxAbs(toTorch(got, "generated_logits"), toTorch(want, "generated_logits"));
                qInfo("cuda %s fp32: generated logits max err %.6f", qPrintable(model), stepErr);
                QVERIFY(stepErr < 2e-3);
            }
        } else {
            const double loose = model == "qwen35-tiny" ? 5 : 1; // as bf16StaysWithinItsPrecision: its README's 10x
            QVERIFY(logitErr < 0.05 * loose * scale);
            QVERIFY(maxAbs(toTorch(got, "attentions"), toTorch(want, "attentions")) < 0.03 * loose);
        }
    }

    // The positions the model used are the table `ropescope positions` prints for the same layout.
    void schemeInjectionUsesThePrintedTable_data()
    {
        QTest::addColumn<QStringList>("scheme");
        QTest::newRow("circle") << QStringList{"--scheme", "circle", "--alpha", "0.3", "--radius", "auto-2"};
        QTest::newRow("vrope") << QStringList{"--scheme", "vrope"};
        QTest::newRow("hard") << QStringList{"--scheme", "hard"};
        // A model runs xd-rope's four axes on its own tokens: the table printed without the newline column.
        QTest::newRow("xd-rope") << QStringList{"--scheme", "xd-rope", "--newline-column", "off"};
    }
    void schemeInjectionUsesThePrintedTable()
    {
        QFETCH(QStringList, scheme);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.safetensors");
        const auto r = runRopescope(QStringList{"forward", "--model", fixture("qwen2vl-tiny"), "--inputs",
                                                fixture("qwen2vl-tiny/inputs_multi.safetensors"), "--output", out, "--generate", "0"} +
                                    scheme);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const SafeTensors got = SafeTensors::open(out);
        const std::string layout = got.metadata().at("layout");
        // 2 text, <vs>, img0 2x3, <ve>, 3 text, <vs>, img1 3x5, <ve>, 2 text
        QCOMPARE(QString::fromStdString(layout), QString("text:3,image:2x3,text:5,image:3x5,text:3"));
        const auto used = toTorch(got, "position_ids").squeeze(1).to(torch::kFloat64); // [C, L]
        const auto printed = runRopescope(QStringList{"positions", "--layout", QString::fromStdString(layout)} + scheme);
        QCOMPARE(printed.exitCode, 0);
        const CsvTable csv = CsvTable::fromText(printed.out);
        QCOMPARE(csv.rows.size(), static_cast<int>(used.size(1)));
        for (int i = 0; i < csv.rows.size(); ++i)
            for (int c = 0; c < used.size(0); ++c)
                QVERIFY2(std::abs(csv.rows[i][6 + c].toDouble() - used[c][i].item<double>()) < 1e-5,
                         qPrintable(QString("token %1 component %2").arg(i).arg(c)));
        QVERIFY(!got.find("generated_ids"));
    }

    // transformers' own position_ids, imported (--positions with the fixture's expected file), give the
    // fixture's logits; a count that differs from the prompt's names both.
    void importedPositionIdsGiveTheFixtureLogits_data() { matchesFixtures_data(); }
    void importedPositionIdsGiveTheFixtureLogits()
    {
        QFETCH(QString, model);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.safetensors");
        const auto r = runRopescope({"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"),
                                     "--positions", fixture(model + "/expected_multi.safetensors"), "--output", out});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const SafeTensors got = SafeTensors::open(out);
        const SafeTensors want = SafeTensors::open(fixture(model + "/expected_multi.safetensors"));
        QVERIFY(torch::equal(toTorch(got, "position_ids"), toTorch(want, "position_ids")));
        QVERIFY(maxAbs(toTorch(got, "logits"), toTorch(want, "logits")) < (model == "qwen35-tiny" ? 3e-4 : 1e-4));
        QCOMPARE(QString::fromStdString(got.metadata().at("scheme")), QString("expected_multi.safetensors"));
        const auto mismatch =
            runRopescope({"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"), "--positions",
                          fixture(model + "/expected.safetensors"), "--output", dir.filePath("bad.safetensors")});
        QCOMPARE(mismatch.exitCode, 2);
        QVERIFY2(mismatch.err.contains("holds positions for 15 tokens") && mismatch.err.contains(") has "), mismatch.err.constData());
        QVERIFY(!QFile::exists(dir.filePath("bad.safetensors")));
    }

    // A built-in exported as a Python scheme and loaded back gives the built-in's logits bit for bit (the
    // same positions, and the same allocation: the design's, or the model's own where the scheme keeps it).
    void exportedSchemeGivesTheBuiltInLogits_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QStringList>("scheme");
        for (const char* m : {"qwen2vl-tiny", "qwen3vl-tiny", "qwen35-tiny"}) {
            QTest::newRow(qPrintable(QString(m) + " mrope")) << QString(m) << QStringList{"--scheme", "mrope"};
            QTest::newRow(qPrintable(QString(m) + " circle")) << QString(m) << QStringList{"--scheme", "circle", "--alpha", "0.3"};
            QTest::newRow(qPrintable(QString(m) + " vrope")) << QString(m) << QStringList{"--scheme", "vrope"};
            QTest::newRow(qPrintable(QString(m) + " videorope")) << QString(m) << QStringList{"--scheme", "videorope"};
        }
    }
    void exportedSchemeGivesTheBuiltInLogits()
    {
        QFETCH(QString, model);
        QFETCH(QStringList, scheme);
        QTemporaryDir dir;
        const QString module = dir.filePath("exported.py");
        QCOMPARE(runRopescope(QStringList{"export-scheme"} + scheme + QStringList{"--output", module}).exitCode, 0);
        const QStringList run{"forward", "--model", fixture(model), "--inputs", fixture(model + "/inputs_multi.safetensors"), "--output"};
        const auto builtIn = runRopescope(run + QStringList{dir.filePath("a.safetensors")} + scheme);
        const auto loaded = runRopescope(run + QStringList{dir.filePath("b.safetensors"), "--scheme", module});
        QVERIFY2(builtIn.exitCode == 0 && loaded.exitCode == 0, (builtIn.err + loaded.err).constData());
        const SafeTensors a = SafeTensors::open(dir.filePath("a.safetensors")), b = SafeTensors::open(dir.filePath("b.safetensors"));
        QVERIFY(torch::equal(toTorch(a, "position_ids"), toTorch(b, "position_ids")));
        // Equal logits need the same allocation too (the names may differ: at the fixtures' 4 to 8 pairs several
        // named allocations give one table, and the file's table is named by the first that matches).
        QVERIFY(torch::equal(toTorch(a, "logits"), toTorch(b, "logits")));
    }

    // Issue 54 item 5: runs that used to exit 0 with a wrong or silent result are refused in one line (exit 2),
    // and nothing is written.
    void runsThatDoNotFitAreRefused_data()
    {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("NaN pixels") << "nan"
                                    << "pixel_values: holds NaN or infinite values";
        QTest::newRow("infinity in the last pixel") << "inf"
                                                    << "pixel_values: holds NaN or infinite values";
        QTest::newRow("a video grid without videos") << "video grid"
                                                     << "video_grid_thw is given without pixel_values_videos";
        QTest::newRow("an image grid without pixels") << "image grid"
                                                      << "image_grid_thw is given without pixel_values";
        QTest::newRow("a short mask") << "mask short"
                                      << "attention_mask must be all ones over input_ids' 15 tokens";
        QTest::newRow("a mask of 2s") << "mask 2"
                                      << "attention_mask must be all ones";
        QTest::newRow("a mask of 0s") << "mask 0"
                                      << "attention_mask must be all ones";
        QTest::newRow("yarn") << "yarn"
                              << "rope type 'yarn' is not applied by RopeScope";
        QTest::newRow("dynamic 1e9") << "dynamic"
                                     << "rope type 'dynamic' is not applied by RopeScope";
        QTest::newRow("untied without lm_head") << "untied"
                                                << "missing tensor 'lm_head.weight' (config.json says tie_word_embeddings false)";
        // Issue 71: an empty prompt crashed in the rotary tables (SIGSEGV); a batch ran as one prompt; float ids exited 1.
        QTest::newRow("empty prompt [1, 0]") << "empty 2-D"
                                             << "input_ids: holds no tokens (an empty prompt)";
        QTest::newRow("empty prompt [0]") << "empty 1-D"
                                          << "input_ids: holds no tokens (an empty prompt)";
        QTest::newRow("a batch of two") << "batch"
                                        << "input_ids: one sequence at a time ([L] or [1, L]), got 2-D [2, 15]";
        QTest::newRow("3-D ids") << "3-D"
                                 << "input_ids: one sequence at a time ([L] or [1, L]), got 3-D [1, 1, 15]";
        QTest::newRow("float ids") << "float ids"
                                   << "input_ids: expected whole-number token ids (I64 or I32), got Float";
    }
    void runsThatDoNotFitAreRefused()
    {
        QFETCH(QString, what);
        QFETCH(QString, message);
        QTemporaryDir dir;
        Tensors inputs = readTensors(fixture("qwen2vl-tiny/inputs.safetensors"));
        const int64_t L = inputs["input_ids"].numel();
        QString model = fixture("qwen2vl-tiny");
        if (what == "nan")
            inputs["pixel_values"][0][0] = std::nan("");
        else if (what == "inf") // the one-pass check reads every value, the last one too
            inputs["pixel_values"][-1][-1] = -std::numeric_limits<float>::infinity();
        else if (what == "video grid")
            inputs["video_grid_thw"] = torch::tensor({int64_t(1) << 20, int64_t(4), int64_t(6)}).reshape({1, 3});
        else if (what == "image grid")
            inputs.erase("pixel_values");
        else if (what == "mask short")
            inputs["attention_mask"] = torch::ones({1, L - 1}, torch::kInt64);
        else if (what == "mask 2")
            inputs["attention_mask"] = torch::full({1, L}, 2, torch::kInt64);
        else if (what == "mask 0")
            inputs["attention_mask"] = torch::zeros({1, L}, torch::kInt64);
        else if (what == "yarn" || what == "dynamic")
            model = editedModel(dir.filePath("model"), [&](QJsonObject& c) {
                QJsonObject scaling = c["rope_scaling"].toObject();
                scaling["rope_type"] = what;
                scaling["factor"] = what == "yarn" ? 4.0 : 1e9;
                c["rope_scaling"] = scaling;
            });
        else if (what == "untied")
            model = editedModel(
                dir.filePath("model"), [](QJsonObject& c) { c["tie_word_embeddings"] = false; }, true);
        else if (what == "empty 2-D")
            inputs["input_ids"] = torch::zeros({1, 0}, torch::kInt64);
        else if (what == "empty 1-D")
            inputs["input_ids"] = torch::zeros({0}, torch::kInt64);
        else if (what == "batch")
            inputs["input_ids"] = inputs["input_ids"].reshape({1, L}).repeat({2, 1});
        else if (what == "3-D")
            inputs["input_ids"] = inputs["input_ids"].reshape({1, 1, L});
        else if (what == "float ids")
            inputs["input_ids"] = inputs["input_ids"].to(torch::kFloat32);
        const QString given = dir.filePath("inputs.safetensors"), out = dir.filePath("out.safetensors");
        QVERIFY(writeTensors(given, inputs));
        const auto r = runRopescope({"forward", "--model", model, "--inputs", given, "--output", out}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()) && r.err.count('\n') == 1, r.err.constData());
        QVERIFY(!QFile::exists(out));
    }

    // Issue 71: checkpoints that ran silently to all-NaN logits (answered as token 0), or as another model than
    // their weights, and configs whose weights no machine holds, are refused in one line (exit 2), nothing written.
    void doctoredModelsAreRefused_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        const QString glmRouter = "tensor 'model.layers.1.mlp.gate.weight' holds NaN or infinite values"; // checked as loaded
        QTest::newRow("NaN router") << "glm4vmoe-tiny"
                                    << "nan router" << glmRouter;
        QTest::newRow("inf router") << "glm4vmoe-tiny"
                                    << "inf router" << glmRouter;
        QTest::newRow("3e38 router") << "glm4vmoe-tiny"
                                     << "huge router"
                                     << "no weight is NaN or infinite, so a product overflowed float32";
        QTest::newRow("-inf correction bias") << "glm4vmoe-tiny"
                                              << "inf bias"
                                              << "tensor 'model.layers.1.mlp.gate.e_score_correction_bias' holds NaN or infinite values";
        QTest::newRow("NaN experts") << "qwen35moe-tiny"
                                     << "nan experts"
                                     << "tensor 'model.language_model.layers.0.mlp.experts.0.down_proj.weight' holds NaN";
        QTest::newRow("Qwen shared expert unused")
            << "qwen35moe-tiny"
            << "no shared"
            << "tensor 'model.layers.0.mlp.shared_expert.gate_proj.weight' is a shared expert, but the config has none "
               "(shared_expert_intermediate_size 0)";
        QTest::newRow("GLM shared expert unused") << "glm4vmoe-tiny"
                                                  << "no shared"
                                                  << "is a shared expert, but the config has none (n_shared_experts 0)";
        QTest::newRow("both expert layouts") << "qwen35moe-tiny"
                                             << "both layouts"
                                             << "model.layers.0.mlp.experts: the checkpoint holds them both per expert";
        QTest::newRow("norm_topk_prob \"no\"") << "glm4vmoe-tiny"
                                               << "topk no"
                                               << "'norm_topk_prob' must be true or false";
        QTest::newRow("vocab 10^9") << "qwen2vl-tiny"
                                    << "vocab"
                                    << "config.json: 512.0 GB of weights at fp32; this machine has";
    }
    void doctoredModelsAreRefused()
    {
        QFETCH(QString, source);
        QFETCH(QString, what);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const QString model = editedModel(
            dir.filePath("model"),
            [&](QJsonObject& c) {
                const bool nested = c.contains("text_config");
                QJsonObject text = nested ? c["text_config"].toObject() : c;
                if (what == "no shared")
                    text[source.startsWith("glm") ? "n_shared_experts" : "shared_expert_intermediate_size"] = 0;
                else if (what == "topk no")
                    text["norm_topk_prob"] = "no";
                else if (what == "vocab")
                    text["vocab_size"] = 1000000000;
                if (nested)
                    c["text_config"] = text;
                else
                    c = text;
            },
            false, source);
        Tensors weights = readTensors(model + "/model.safetensors");
        const std::string glm = "model.language_model.layers.1.mlp.gate.", qwen = "model.language_model.layers.0.mlp.";
        if (what == "nan router")
            weights[glm + "weight"][0][0] = std::nan("");
        else if (what == "inf router")
            weights[glm + "weight"][2][3] = std::numeric_limits<float>::infinity();
        else if (what == "huge router")
            weights[glm + "weight"].fill_(3e38);
        else if (what == "inf bias")
            weights[glm + "e_score_correction_bias"][1] = -std::numeric_limits<float>::infinity();
        else if (what == "nan experts")
            for (int e = 0; e < 8; ++e)
                weights[qwen + "experts." + std::to_string(e) + ".down_proj.weight"].fill_(std::nan(""));
        else if (what == "both layouts") {
            const auto gate = weights[qwen + "experts.0.gate_proj.weight"];
            weights[qwen + "experts.gate_up_proj"] = torch::zeros({8, 2 * gate.size(0), gate.size(1)});
            weights[qwen + "experts.down_proj"] = torch::zeros({8, gate.size(1), gate.size(0)});
        }
        QFile::remove(model + "/model.safetensors");
        QVERIFY(writeTensors(model + "/model.safetensors", weights));
        const QString out = dir.filePath("out.safetensors");
        const auto r =
            runRopescope({"forward", "--model", model, "--inputs", fixture(source + "/inputs.safetensors"), "--output", out}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()) && r.err.count('\n') == 1, r.err.constData());
        QVERIFY(!QFile::exists(out));
    }

    // Issue 73: a Gemma config whose layer kinds, head sizes or rope parameters do not fit, a missing per-layer table, an
    // audio token: one line naming it, exit 2, nothing written (text prompts: the _text cases).
    void gemmaMisfitsAreRefused_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("odd global head") << "gemma4-tiny"
                                         << "global head 33"
                                         << "text_config.global_head_dim gives a head_dim of 33";
        QTest::newRow("kv heads") << "gemma4-tiny"
                                  << "global kv 3"
                                  << "gives 3 key/value heads, which do not divide the 4";
        QTest::newRow("yarn full") << "gemma4-tiny"
                                   << "yarn"
                                   << "rope_parameters.full_attention.rope_type 'yarn' is not one";
        QTest::newRow("bidirectional all") << "gemma4-tiny"
                                           << "bidi all"
                                           << "use_bidirectional_attention 'all' makes an encoder";
        QTest::newRow("layer types") << "gemma4-tiny"
                                     << "types 5"
                                     << "layer_types must list one type per layer (6)";
        QTest::newRow("kv sharing") << "gemma4e-tiny"
                                    << "share 6"
                                    << "num_kv_shared_layers 6 leaves layer 0 no earlier layer";
        QTest::newRow("gemma3 scaling") << "gemma3-tiny"
                                        << "dynamic"
                                        << "rope_scaling.rope_type 'dynamic' is not one";
        QTest::newRow("no per-layer table") << "gemma4e-tiny"
                                            << "drop table"
                                            << "missing tensor 'model.embed_tokens_per_layer.weight'";
        QTest::newRow("no k_proj") << "gemma4-tiny"
                                   << "drop k"
                                   << "missing tensor 'model.layers.0.self_attn.k_proj.weight'";
        QTest::newRow("audio token") << "gemma4-tiny"
                                     << "audio"
                                     << "input_ids holds the audio token 251";
    }
    void gemmaMisfitsAreRefused()
    {
        QFETCH(QString, source);
        QFETCH(QString, what);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const QString model = editedModel(
            dir.filePath("model"),
            [&](QJsonObject& c) {
                QJsonObject text = c["text_config"].toObject();
                QJsonObject rope = text.value("rope_parameters").toObject();
                if (what == "global head 33")
                    text["global_head_dim"] = 33;
                else if (what == "global kv 3")
                    text["num_global_key_value_heads"] = 3;
                else if (what == "yarn")
                    rope["full_attention"] = QJsonObject{{"rope_type", "yarn"}, {"rope_theta", 1e6}, {"factor", 4}};
                else if (what == "bidi all")
                    text["use_bidirectional_attention"] = "all";
                else if (what == "types 5")
                    text["layer_types"] =
                        QJsonArray{"sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"};
                else if (what == "share 6")
                    text["num_kv_shared_layers"] = 6;
                else if (what == "dynamic")
                    text["rope_scaling"] = QJsonObject{{"rope_type", "dynamic"}, {"factor", 8}};
                if (text.contains("rope_parameters"))
                    text["rope_parameters"] = rope;
                c["text_config"] = text;
            },
            false, source);
        const QString inputs = dir.filePath("inputs.safetensors");
        Tensors in = readTensors(fixture(source + "/inputs_text.safetensors"));
        if (what == "audio")
            in["input_ids"][0][3] = 251;
        QVERIFY(writeTensors(inputs, in));
        if (what.startsWith("drop")) {
            Tensors weights = readTensors(model + "/model.safetensors");
            weights.erase(what == "drop table" ? "model.language_model.embed_tokens_per_layer.weight"
                                               : "model.language_model.layers.0.self_attn.k_proj.weight");
            QFile::remove(model + "/model.safetensors");
            QVERIFY(writeTensors(model + "/model.safetensors", weights));
        }
        const QString out = dir.filePath("out.safetensors");
        const auto r = runRopescope({"forward", "--model", model, "--inputs", inputs, "--output", out}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()) && r.err.count('\n') == 1, r.err.constData());
        QVERIFY(!QFile::exists(out));
    }

    // Issue 71: bench model on --layers that keep no MoE layer crashed (SIGSEGV on GLM-4.5V's documented --layers 1);
    // --layers past the config ran the config's layers silently; sizes no machine holds were allocated until the
    // allocator failed. Each is one line and exit 2, before a weight is made.
    void benchModelRefusesWhatCannotRun_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("layers");
        QTest::addColumn<QString>("message");
        QTest::newRow("GLM-4.5V --layers 1") << "glm45v.json"
                                             << ""
                                             << "1"
                                             << "hold no MoE layer (its first is layer 1); give --layers 2 or more";
        QTest::newRow("--layers past the config") << "qwen2vl-2b.json"
                                                  << ""
                                                  << "29"
                                                  << "qwen2vl-2b.json has 28 decoder layers";
        QTest::newRow("65,536 experts") << "qwen35-35b-a3b.json"
                                        << "num_experts=65536"
                                        << "1"
                                        << "GB of weights at fp32; this machine has";
        QTest::newRow("vocab 10^9") << "qwen3vl-2b.json"
                                    << "vocab_size=1000000000"
                                    << "1"
                                    << "GB of weights at fp32; this machine has";
    }
    void benchModelRefusesWhatCannotRun()
    {
        QFETCH(QString, config);
        QFETCH(QString, edit);
        QFETCH(QString, layers);
        QFETCH(QString, message);
        QTemporaryDir dir;
        QString path = test_paths::sourceDir() + "/resources/configs/" + config;
        if (!edit.isEmpty()) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            QJsonObject c = QJsonDocument::fromJson(f.readAll()).object();
            QJsonObject text = c["text_config"].toObject();
            text[edit.section('=', 0, 0)] = edit.section('=', 1).toDouble();
            c["text_config"] = text;
            path = dir.filePath("config.json");
            QFile out(path);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(QJsonDocument(c).toJson());
        }
        const auto r = runRopescope({"bench", "model", "--config", path, "--random", "--layers", layers, "--runs", "1"}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message.toUtf8()) && r.err.count('\n') == 1, r.err.constData());
    }

    // Under an address-space cap (ulimit -v) the cap is the memory: Qwen3.5-35B-A3B's first 3 layers (about 14 GB at
    // fp32) fit this machine but not 8 GB, and are refused before a weight is made, where they used to be allocated
    // until the allocator failed.
    void benchModelHeedsTheAddressSpaceCap()
    {
        QProcess p;
        p.start("sh",
                {"-c", "ulimit -v 8000000 && exec \"$0\" \"$@\"", ROPESCOPE_BINARY, "bench", "model", "--config",
                 test_paths::sourceDir() + "/resources/configs/qwen35-35b-a3b.json", "--random", "--layers", "3", "--runs", "1"});
        QVERIFY(p.waitForFinished(120000));
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.contains("GB of weights at fp32; this process may use") && err.contains("(its ulimit)"), err.constData());
    }

    // Issue 71: the prompt's memory check left out what generation adds. 4,096 steps of a 10^6-token vocabulary keep
    // 16 GB of logits, more than half of this machine: refused before the prefill, naming the prompt.
    void generationCountsInThePromptsMemory()
    {
        QTemporaryDir dir;
        const QString model = editedModel(dir.filePath("model"), [](QJsonObject& c) { c["vocab_size"] = 1000000; });
        Vlm vlm(Checkpoint::random(model + "/config.json"), torch::kCPU);
        ForwardRequest req;
        req.inputIds = torch::randint(0, 200, {16}, torch::kInt64);
        req.scheme = ropescope::geometry::defaultSchemeParams(ownSchemeKind(vlm.config()));
        req.generate = 4096;
        try {
            vlm.run(req);
            QFAIL("4,096 steps of a 10^6-token vocabulary ran");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("the prompt is 16 tokens; this run needs about"), e.what());
        }
        req.generate = 2; // a few steps fit, and run
        QCOMPARE(vlm.run(req).generatedIds.numel(), int64_t(2));
    }

    void errorsNameTheProblem()
    {
        QTemporaryDir dir;
        // A model folder whose weights lack a tensor.
        const QString broken = dir.filePath("broken");
        QDir().mkpath(broken);
        QFile::copy(fixture("qwen2vl-tiny/config.json"), broken + "/config.json");
        SafeTensorsWriter w;
        const float one = 1;
        w.add("model.norm.weight", DType::F32, {1}, &one, sizeof one);
        QFile f(broken + "/model.safetensors");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(w.bytes());
        f.close();
        const QString out = dir.filePath("out.safetensors");
        const QString inputs = fixture("qwen2vl-tiny/inputs.safetensors");
        auto r = runRopescope({"forward", "--model", fixture("qwen2vl-tiny"), "--inputs", inputs, "--output", out, "--dtype", "fp16"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--dtype: expected fp32 or bf16, got 'fp16'"), r.err.constData());
        r = runRopescope({"forward", "--model", broken, "--inputs", inputs, "--output", out});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("missing tensor 'visual.patch_embed.proj.weight'"), r.err.constData());
        QVERIFY(!QFile::exists(out));

        // A wrong shape names expected and found.
        SafeTensorsWriter w2;
        const float patch[4] = {};
        w2.add("visual.patch_embed.proj.weight", DType::F32, {2, 2}, patch, sizeof patch);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(w2.bytes());
        f.close();
        r = runRopescope({"forward", "--model", broken, "--inputs", inputs, "--output", out});
        QVERIFY2(r.err.contains("has shape [2,2], expected [32,3,2,14,14]"), r.err.constData());

        // A truncated file.
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("\x10\0\0\0", 4);
        f.close();
        r = runRopescope({"forward", "--model", broken, "--inputs", inputs, "--output", out});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("truncated"), r.err.constData());

        // Flags.
        QCOMPARE(runRopescope({"forward", "--model", fixture("qwen2vl-tiny"), "--inputs", inputs}).exitCode, 2);
        r = runRopescope({"forward", "--model", fixture("qwen2vl-tiny"), "--inputs", inputs, "--output", out, "--age", "strategy_4",
                          "--layers", "5", "--scheme", "circle"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--layers 5: the model has 2 decoder layers"), r.err.constData());
        QVERIFY(!QFile::exists(out));
    }
};

QTEST_APPLESS_MAIN(TestForwardCli)
#include "test_forward_cli.moc"

// `ropescope bias`: the mean map against a plain loop over the samples' own attention (attend's pipeline),
// shards merged against one run, and its bad inputs.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/preprocess_config.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"

#include "tests/support/run_ropescope.h"

#include <torch/types.h>
#endif

using namespace ropescope::model;

namespace {

const QString kModel = QString(ROPESCOPE_TEST_DATA) + "/../../resources/models/mrope";

QJsonObject jsonOf(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

// Two videos of the bundled task's drawn pictures: 4 frames and 3 (the last temporal patch padded), both 2
// temporal patches of the 8x8 grid.
QStringList makeVideos(const QString& root)
{
    QStringList videos;
    const int frames[] = {4, 3};
    for (int v = 0; v < 2; ++v) {
        const QString folder = root + QString("/video_%1").arg(v);
        QDir().mkpath(folder);
        for (int f = 0; f < frames[v]; ++f)
            QFile::copy(QString(ROPESCOPE_TEST_DATA) + QString("/drawn/drawn_%1.png").arg(v * 4 + f, 2, 10, QChar('0')),
                        folder + QString("/f%1.png").arg(f));
        videos << folder;
    }
    return videos;
}

bool oneLine(const QByteArray& err)
{
    return !err.trimmed().isEmpty() && !err.trimmed().contains('\n');
}

} // namespace

class TestPositionalBias : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void meanMapIsTheSamplesOwnAttentionAveraged()
    {
        QTemporaryDir dir;
        const RopescopeRun r = runRopescope(
            {"bias", "--model", kModel, "--samples", "5", "--schemes", "vrope", "--capture-layers", "1,3", "--output", dir.path()}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject bias = jsonOf(dir.filePath("bias.json"));
        QCOMPARE(bias["samples"].toInt(), 5);
        const QJsonArray schemes = bias["schemes"].toArray();
        QCOMPARE(schemes.size(), 2); // the model's own, then vrope

        // The independent computation: attend's pipeline per sample, its captured question rows averaged over
        // heads and rows, normalised over the image, averaged over samples.
        const ModelBundle model = ModelBundle::load(kModel);
        Vlm& vlm = *model.vlm;
        const Tokenizer& tok = *model.tokenizer;
        for (int s = 0; s < 2; ++s) {
            AttentionQuery q;
            q.layers = {1, 3};
            q.generate = 1;
            if (s == 1)
                q.scheme.params.kind = ropescope::geometry::SchemeKind::Vrope;
            const ResolvedScheme scheme = resolveScheme(model, s == 0 ? std::nullopt : std::optional<ModelScheme>(q.scheme));
            std::vector<std::vector<double>> expected(2, std::vector<double>(64, 0.0)), expectedAnswer = expected;
            for (int k = 0; k < 5; ++k) {
                const SyntheticSample sample = SyntheticTask::sample(1000003, static_cast<uint64_t>(k));
                q.images = {sample.image};
                q.question = sample.question;
                const AttentionRun run = runAttention(vlm, tok, q, scheme);
                for (size_t l = 0; l < 2; ++l) {
                    const torch::Tensor probs = run.attention()[l].to(torch::kFloat64); // [H, Q, 64]
                    for (int which = 0; which < 2; ++which) {
                        const torch::Tensor map =
                            which == 0 ? probs.mean(std::vector<int64_t>{0, 1}) : probs.select(1, probs.size(1) - 1).mean(0);
                        const double sum = map.sum().item<double>();
                        for (int c = 0; c < 64; ++c)
                            (which == 0 ? expected : expectedAnswer)[l][static_cast<size_t>(c)] += map[c].item<double>() / sum / 5.0;
                    }
                }
            }
            const QJsonArray layers = schemes[s].toObject()["layers"].toArray();
            QCOMPARE(layers.size(), 2);
            for (size_t l = 0; l < 2; ++l) {
                const QJsonObject layer = layers[static_cast<qsizetype>(l)].toObject();
                QCOMPARE(layer["layer"].toInt(), l == 0 ? 1 : 3);
                const QJsonArray question = layer["question"].toObject()["mean_map"].toArray();
                const QJsonArray answer = layer["answer"].toObject()["mean_map"].toArray();
                QCOMPARE(question.size(), 64);
                double centreRow = 0;
                for (int c = 0; c < 64; ++c) {
                    QVERIFY2(std::abs(question[c].toDouble() - expected[l][static_cast<size_t>(c)]) < 1e-6,
                             qPrintable(QString("scheme %1 layer %2 cell %3: %4 vs %5")
                                            .arg(s)
                                            .arg(l)
                                            .arg(c)
                                            .arg(question[c].toDouble())
                                            .arg(expected[l][static_cast<size_t>(c)])));
                    QVERIFY(std::abs(answer[c].toDouble() - expectedAnswer[l][static_cast<size_t>(c)]) < 1e-6);
                    centreRow += expected[l][static_cast<size_t>(c)] * (c / 8);
                }
                // The centre of mass of the mean map is the mean of the samples' centres.
                QVERIFY(std::abs(layer["question"].toObject()["centre_of_mass"].toObject()["row"].toObject()["value"].toDouble() -
                                 centreRow) < 1e-6);
            }
        }
        for (const char* name : {"bias.png", "bias.svg", "bias.pdf", "bias.csv", "bias_state.json"})
            QVERIFY2(QFileInfo(dir.filePath(name)).size() > 100, name);
        QFile csv(dir.filePath("bias.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readAll().count('\n'), 1 + 2 * 2 * 2); // header + schemes x layers x maps
    }

    void videoFramesBecomeTemporalPatches()
    {
        // The independent check of the video processor: transformers repeats an image over the temporal patch,
        // so a video whose pairs of frames are equal has the patch rows of those images, patch after patch.
        const Vlm vlm(kModel);
        const VisionConfig& v = vlm.config().vision;
        const QImage a = loadImage(QString(ROPESCOPE_TEST_DATA) + "/drawn/drawn_00.png"),
                     b = loadImage(QString(ROPESCOPE_TEST_DATA) + "/drawn/drawn_01.png");
        const ProcessedImage ia = preprocessImage(a, v), ib = preprocessImage(b, v);
        const ProcessedImage video = preprocessVideo({a, a, b, b}, v);
        QCOMPARE(video.grid[0][0].item<int64_t>(), 2);
        QCOMPARE(video.grid[0][1].item<int64_t>(), ia.grid[0][1].item<int64_t>());
        const int64_t n = ia.pixels.size(0);
        QVERIFY(torch::equal(video.pixels.slice(0, 0, n), ia.pixels));
        QVERIFY(torch::equal(video.pixels.slice(0, n, 2 * n), ib.pixels));
        // Three frames: the last patch is padded with the last frame.
        QVERIFY(torch::equal(preprocessVideo({a, a, b}, v).pixels, video.pixels));
        QVERIFY_THROWS_EXCEPTION(ModelError, preprocessVideo({}, v));

        // Qwen3-VL's processor writes each temporal patch after its time, the mean of its two frames at 2 frames
        // per second, as Python's "%.1f" (0.25 -> 0.2, 1.25 -> 1.2).
        const Tokenizer plain = Tokenizer::load(QString(ROPESCOPE_TEST_DATA) + "/attend/tokenizer.json");
        const QString prompt = videoPrompt(plain, "q", 2, 3, 2, ChatTemplate::Qwen3VL);
        QCOMPARE(prompt,
                 QString("<0.2 seconds><|vision_start|>") + QString("<|video_pad|>").repeated(3) +
                     "<|vision_end|><1.2 seconds><|vision_start|>" + QString("<|video_pad|>").repeated(3) + "<|vision_end|>q");
    }

    void videoMeanMapIsTheSamplesOwnAttentionAveraged()
    {
        QTemporaryDir dir;
        const QStringList videos = makeVideos(dir.filePath("videos"));
        const QString question = "what colour is the circle";
        const RopescopeRun r = runRopescope({"bias", "--model", kModel, "--videos", dir.filePath("videos"), "--question", question,
                                             "--capture-layers", "1,3", "--keep-samples", "--output", dir.filePath("out")},
                                            false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject bias = jsonOf(dir.filePath("out/bias.json"));
        QCOMPARE(bias["samples"].toInt(), 2);
        QCOMPARE(bias["frames"].toInt(), 2);

        // By hand: the plain prompt (<|vision_start|> <|video_pad|> x 2*64 <|vision_end|> question), the video's
        // patch rows, the question rows' attention over the video tokens; the within-frame map and mass per frame.
        const ModelBundle model = ModelBundle::load(kModel);
        Vlm& vlm = *model.vlm;
        const Tokenizer& tok = *model.tokenizer;
        const ResolvedScheme own = resolveScheme(model, std::nullopt);
        std::vector<std::vector<double>> within(2, std::vector<double>(64, 0.0)), frames(2, std::vector<double>(2, 0.0));
        for (const QString& folder : videos) {
            std::vector<QImage> images;
            for (const QString& name : QDir(folder).entryList({"*.png"}, QDir::Files, QDir::Name))
                images.push_back(loadImage(folder + "/" + name));
            const ProcessedImage video = preprocessVideo(images, vlm.config().vision, loadPreprocessOptions(kModel, vlm.config()));
            const std::vector<int64_t> ids =
                tok.encode("<|vision_start|>" + QString("<|video_pad|>").repeated(128) + "<|vision_end|>" + question);
            ForwardRequest f;
            f.inputIds = torch::tensor(ids, torch::kInt64);
            f.videoPixelValues = video.pixels;
            f.videoGridThw = video.grid;
            f.scheme = own.scheme.params;
            f.capture.layers = {1, 3};
            f.capture.selection.rows = torch::arange(130, static_cast<int64_t>(ids.size()), torch::kInt64);
            f.capture.selection.cols = torch::arange(1, 129, torch::kInt64);
            const ForwardResult run = vlm.run(f);
            for (size_t l = 0; l < 2; ++l) {
                const torch::Tensor map = run.prefill.attentions[l].to(torch::kFloat64).mean(std::vector<int64_t>{0, 1}); // [128]
                const double sum = map.sum().item<double>();
                for (int t = 0; t < 128; ++t) {
                    within[l][static_cast<size_t>(t % 64)] += map[t].item<double>() / sum / 2.0;
                    frames[l][static_cast<size_t>(t / 64)] += map[t].item<double>() / sum / 2.0;
                }
            }
        }
        const QJsonArray layers = bias["schemes"].toArray()[0].toObject()["layers"].toArray();
        for (size_t l = 0; l < 2; ++l) {
            const QJsonObject q = layers[static_cast<qsizetype>(l)].toObject()["question"].toObject();
            for (int c = 0; c < 64; ++c)
                QVERIFY2(std::abs(q["mean_map"].toArray()[c].toDouble() - within[l][static_cast<size_t>(c)]) < 1e-6,
                         qPrintable(QString::number(c)));
            for (int k = 0; k < 2; ++k)
                QVERIFY(std::abs(q["frame_profile"].toArray()[k].toDouble() - frames[l][static_cast<size_t>(k)]) < 1e-6);
            QVERIFY(q.contains("last_vs_first_frame"));
        }
        // --keep-samples: one row per scheme x layer x map x sample, the 64 cells then the 2 frame masses; their
        // mean is the mean map.
        QFile kept(dir.filePath("out/bias_samples.csv"));
        QVERIFY(kept.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = kept.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 1 + 2 * 2 * 2);
        QCOMPARE(lines[0].split(',').size(), 4 + 64 + 2);
        double cell0 = 0;
        for (int k = 1; k <= 2; ++k) { // own, layer 1, question, samples 0 and 1
            const QList<QByteArray> fields = lines[k].split(',');
            QCOMPARE(fields[3].toInt(), k - 1);
            cell0 += fields[4].toDouble() / 2.0;
        }
        QVERIFY(std::abs(cell0 - within[0][0]) < 1e-9);
        // Without the flag, no per-sample file.
        QCOMPARE(runRopescope({"bias", "--model", kModel, "--videos", dir.filePath("videos"), "--question", question, "--capture-layers",
                               "1", "--output", dir.filePath("plain")},
                              false)
                     .exitCode,
                 0);
        QVERIFY(!QFileInfo::exists(dir.filePath("plain/bias_samples.csv")));
    }

    void videoShardsMergeIntoOneRun()
    {
        QTemporaryDir dir;
        makeVideos(dir.filePath("videos"));
        const QStringList common{
            "bias",  "--model",          kModel, "--videos",      dir.filePath("videos"), "--question", "where is the square", "--schemes",
            "vrope", "--capture-layers", "2",    "--keep-samples"};
        QCOMPARE(runRopescope(common + QStringList{"--output", dir.filePath("one")}, false).exitCode, 0);
        QCOMPARE(runRopescope(common + QStringList{"--shard", "0/2", "--output", dir.filePath("s1")}, false).exitCode, 0);
        QCOMPARE(runRopescope(common + QStringList{"--shard", "1/2", "--output", dir.filePath("s2")}, false).exitCode, 0);
        const RopescopeRun merged =
            runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("s2"), "--output", dir.filePath("m")}, false);
        QVERIFY2(merged.exitCode == 0, merged.err.constData());
        QCOMPARE(jsonOf(dir.filePath("m/bias_state.json"))["cells"].toArray(),
                 jsonOf(dir.filePath("one/bias_state.json"))["cells"].toArray());
        QFile a(dir.filePath("one/bias_samples.csv")), b(dir.filePath("m/bias_samples.csv"));
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QCOMPARE(b.readAll(), a.readAll());
        // A shard without --keep-samples is another setting.
        QCOMPARE(runRopescope(common.mid(0, common.size() - 1) + QStringList{"--shard", "1/2", "--output", dir.filePath("bare")}, false)
                     .exitCode,
                 0);
        const RopescopeRun r =
            runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("bare"), "--output", dir.filePath("x")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--keep-samples") && oneLine(r.err), r.err.constData());
    }

    void shardsMergeIntoOneRun()
    {
        QTemporaryDir dir;
        const QStringList common{"bias", "--model", kModel, "--samples", "7", "--schemes", "circle", "--capture-layers", "0,3"};
        QCOMPARE(runRopescope(common + QStringList{"--output", dir.filePath("one")}, false).exitCode, 0);
        QCOMPARE(runRopescope(common + QStringList{"--shard", "0/2", "--output", dir.filePath("s1")}, false).exitCode, 0);
        QCOMPARE(runRopescope(common + QStringList{"--shard", "1/2", "--output", dir.filePath("s2")}, false).exitCode, 0);
        const RopescopeRun merged =
            runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("s2"), "--output", dir.filePath("m")}, false);
        QVERIFY2(merged.exitCode == 0, merged.err.constData());
        const QJsonObject one = jsonOf(dir.filePath("one/bias_state.json")), m = jsonOf(dir.filePath("m/bias_state.json"));
        // Sums bit-identical (fixed point), every sample's stats the same.
        QCOMPARE(m["cells"].toArray(), one["cells"].toArray());
        QCOMPARE(jsonOf(dir.filePath("s1/bias.json"))["samples"].toInt(), 4);
        QCOMPARE(jsonOf(dir.filePath("s1/bias.json"))["complete"].toBool(), false);
        // Derived numbers within 1e-12.
        const QJsonObject a = jsonOf(dir.filePath("one/bias.json")), b = jsonOf(dir.filePath("m/bias.json"));
        QCOMPARE(b["complete"].toBool(), true);
        const QJsonObject la = a["schemes"].toArray()[1].toObject()["layers"].toArray()[1].toObject()["question"].toObject();
        const QJsonObject lb = b["schemes"].toArray()[1].toObject()["layers"].toArray()[1].toObject()["question"].toObject();
        for (const char* key : {"last_vs_first_row", "distance_correlation"})
            for (int i = 0; i < 2; ++i)
                QVERIFY(std::abs(la[key].toObject()["ci95"].toArray()[i].toDouble() - lb[key].toObject()["ci95"].toArray()[i].toDouble()) <
                        1e-12);
        for (int c = 0; c < 64; ++c)
            QVERIFY(std::abs(la["mean_map"].toArray()[c].toDouble() - lb["mean_map"].toArray()[c].toDouble()) < 1e-12);

        // Shards of other settings, or the same shard twice, are refused in one line.
        QCOMPARE(runRopescope({"bias", "--model", kModel, "--samples", "7", "--capture-layers", "0,3", "--shard", "1/2", "--output",
                               dir.filePath("other")},
                              false)
                     .exitCode,
                 0);
        RopescopeRun r = runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("other"), "--output", dir.filePath("x")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("different settings: the schemes") && oneLine(r.err), r.err.constData());
        r = runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("s1"), "--output", dir.filePath("x")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("was measured by two shards"), r.err.constData());
        QVERIFY(!QFileInfo::exists(dir.filePath("x")));
        // Another model's shard.
        QCOMPARE(runRopescope({"bias", "--model", kModel + "/../vrope", "--samples", "7", "--schemes", "circle", "--capture-layers", "0,3",
                               "--shard", "1/2", "--output", dir.filePath("vrope")},
                              false)
                     .exitCode,
                 0);
        r = runRopescope({"bias", "--merge", dir.filePath("s1"), dir.filePath("vrope"), "--output", dir.filePath("x")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("different settings: the model"), r.err.constData());
    }

    void batchItemsWriteTheSameMeasurement()
    {
        QTemporaryDir dir;
        QCOMPARE(runRopescope({"bias", "--model", kModel, "--samples", "4", "--schemes", "vrope", "--capture-layers", "2", "--output",
                               dir.filePath("cli")},
                              false)
                     .exitCode,
                 0);
        QFile job(dir.filePath("job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QJsonDocument(QJsonObject{{"items",
                                             QJsonArray{QJsonObject{{"type", "bias"},
                                                                    {"model", kModel},
                                                                    {"samples", 4},
                                                                    {"schemes", "vrope"},
                                                                    {"capture-layers", "2"},
                                                                    {"output", "b.json"}},
                                                        QJsonObject{{"type", "bias"},
                                                                    {"model", kModel},
                                                                    {"samples", 4},
                                                                    {"schemes", "vrope"},
                                                                    {"capture-layers", "2"},
                                                                    {"output", "b.svg"}}}}})
                      .toJson());
        job.close();
        const RopescopeRun r = runRopescope({"batch", dir.filePath("job.json"), "--output", dir.filePath("batch")}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(jsonOf(dir.filePath("batch/b.json"))["schemes"], jsonOf(dir.filePath("cli/bias.json"))["schemes"]);
        QVERIFY(QFileInfo(dir.filePath("batch/b.svg")).size() > 1000);
    }

    void badInputsAreOneLine()
    {
        QTemporaryDir dir;
        QFile empty(dir.filePath("empty.jsonl"));
        QVERIFY(empty.open(QIODevice::WriteOnly));
        empty.close();
        RopescopeRun r =
            runRopescope({"bias", "--model", kModel, "--questions", dir.filePath("empty.jsonl"), "--output", dir.filePath("o")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("empty.jsonl: no questions") && oneLine(r.err), r.err.constData());

        QDir().mkpath(dir.filePath("images"));
        QFile::copy(QString(ROPESCOPE_TEST_DATA) + "/drawn/drawn_00.png", dir.filePath("images/a.png"));
        QFile bad(dir.filePath("images/b.png"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("not a png");
        bad.close();
        r = runRopescope({"bias", "--model", kModel, "--images", dir.filePath("images"), "--question", "what colour is the circle",
                          "--output", dir.filePath("o")},
                         false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("b.png") && oneLine(r.err), r.err.constData());
        QVERIFY(!QFileInfo::exists(dir.filePath("o")));

        r = runRopescope({"bias", "--model", kModel, "--samples", "3", "--shard", "3/2", "--output", dir.filePath("o")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--shard") && oneLine(r.err), r.err.constData());
        r = runRopescope(
            {"bias", "--model", kModel, "--samples", "3", "--questions", dir.filePath("empty.jsonl"), "--output", dir.filePath("o")},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("give one sample source"), r.err.constData());

        // Videos: an empty folder, a corrupt frame.
        QDir().mkpath(dir.filePath("videos/empty"));
        r = runRopescope({"bias", "--model", kModel, "--videos", dir.filePath("videos"), "--question", "q", "--output", dir.filePath("o")},
                         false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("no videos in the folder") && oneLine(r.err), r.err.constData());
        QDir().mkpath(dir.filePath("videos/v"));
        QFile::copy(dir.filePath("images/a.png"), dir.filePath("videos/v/f0.png"));
        QFile::copy(dir.filePath("images/b.png"), dir.filePath("videos/v/f1.png"));
        r = runRopescope({"bias", "--model", kModel, "--videos", dir.filePath("videos"), "--question", "what colour is the circle",
                          "--output", dir.filePath("o")},
                         false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("f1.png") && oneLine(r.err), r.err.constData());
        QVERIFY(!QFileInfo::exists(dir.filePath("o")));
        r = runRopescope({"bias", "--model", kModel, "--videos", dir.filePath("videos"), "--output", dir.filePath("o")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--question Q goes with"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestPositionalBias)
#include "test_positional_bias.moc"

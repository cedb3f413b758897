// check-positions against transformers' own position_ids (the shared fixtures, unmodified: every case
// matches) and against copies made wrong in each way the issue names, each found and named by its kind:
// 1-D positions, temporal ids (constant, or stepping by the wrong interval), a padding offset, rope_deltas.
// A Qwen2.5-VL video case is written out by hand from the rule (tau = floor(t * second_per_grid * 2)).
#include <QDir>
#include <QFileInfo>
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
#include "core/model/analysis/position_dump.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/safetensors.h"

#include "tests/support/run_ropescope.h"

#include <torch/types.h>
#include <torch/serialize.h>

#include <cstring>
#endif

using namespace ropescope::model;

namespace {

const QString kFixtures = QString(ROPESCOPE_TEST_DATA) + "/fixtures/";
const QString kTorchSave = QString(ROPESCOPE_TEST_DATA) + "/positions/torch_save/";
const QString kGemma = QString(ROPESCOPE_TEST_DATA) + "/positions/gemma/";

// The fixture case as a pipeline would dump it: its inputs, and transformers' position_ids and rope_deltas.
DumpBatch fixtureDump(const QString& family, const QString& suffix)
{
    DumpBatch a = readDumpBatch(kFixtures + family + "/inputs" + suffix + ".safetensors");
    const DumpBatch e = readDumpBatch(kFixtures + family + "/expected" + suffix + ".safetensors");
    a.tensors.erase("pixel_values");
    a.tensors.erase("pixel_values_videos");
    a.tensors["position_ids"] = e.tensors.at("position_ids");
    a.tensors["rope_deltas"] = e.tensors.at("rope_deltas");
    return a;
}

PositionRule configOf(const QString& family)
{
    return ruleForModel(kFixtures + family);
}

DumpTensor ints(std::vector<int64_t> shape, std::vector<int64_t> values)
{
    DumpTensor t;
    t.shape = std::move(shape);
    t.ints = std::move(values);
    t.reals.assign(t.ints.begin(), t.ints.end());
    return t;
}

int64_t& positionAt(DumpTensor& pos, int axis, int64_t b, int64_t i)
{
    return pos.ints[static_cast<size_t>((axis * pos.shape[1] + b) * pos.shape[2] + i)];
}

// Qwen2.5-VL: text 3, <|vision_start|> ... a video of 2 temporal patches on a 4x4 patch grid (2x2 merged),
// text 2 (ids 250 vision_start, 254 video, 251 vision_end as the fixture config). By hand: tau(t) =
// floor(t * second_per_grid * tokens_per_second 2); with 0.5 s per grid t steps by 1; text after the video
// resumes at max + 1.
DumpBatch qwen25Video(double secondPerGrid, const std::vector<int64_t>& t, const std::vector<int64_t>& h, const std::vector<int64_t>& w)
{
    DumpBatch d;
    d.name = "hand-written qwen2.5-vl video";
    d.tensors["input_ids"] = ints({1, 14}, {10, 11, 250, 254, 254, 254, 254, 254, 254, 254, 254, 251, 12, 13});
    d.tensors["attention_mask"] = ints({1, 14}, std::vector<int64_t>(14, 1));
    d.tensors["video_grid_thw"] = ints({1, 3}, {2, 4, 4});
    DumpTensor s;
    s.shape = {1};
    s.reals = {secondPerGrid};
    s.ints = {0};
    s.integral = false;
    d.tensors["second_per_grid_ts"] = s;
    std::vector<int64_t> all = t;
    all.insert(all.end(), h.begin(), h.end());
    all.insert(all.end(), w.begin(), w.end());
    d.tensors["position_ids"] = ints({3, 1, 14}, all);
    return d;
}
// The batch as a safetensors file, as safetensors' save_file writes a pipeline's dump.
bool writeDump(const QString& path, const DumpBatch& d)
{
    SafeTensorsWriter w;
    for (const auto& [name, t] : d.tensors) {
        if (!t.integral)
            continue;
        w.add(name, DType::I64, t.shape, t.ints.data(), t.ints.size() * sizeof(int64_t));
    }
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(w.bytes()) > 0;
}

// Gemma rows: `ids` laid out at `at` in a row of `width` (the rest padding, id 0, mask 0, position 1), with `positions`.
void gemmaRow(std::vector<int64_t>& ids, std::vector<int64_t>& mask, std::vector<int64_t>& pos, const std::vector<int64_t>& rowIds,
              const std::vector<int64_t>& rowPositions, size_t at, size_t width)
{
    for (size_t i = 0; i < width; ++i) {
        const bool in = i >= at && i < at + rowIds.size();
        ids.push_back(in ? rowIds[i - at] : 0);
        mask.push_back(in ? 1 : 0);
        pos.push_back(in ? rowPositions[i - at] : 1);
    }
}

std::vector<int64_t> counting(size_t n, int64_t from = 0)
{
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = from + static_cast<int64_t>(i);
    return v;
}

const std::vector<int64_t> kVideoH{0, 1, 2, 3, 3, 3, 4, 4, 3, 3, 4, 4, 5, 6}, kVideoW{0, 1, 2, 3, 3, 4, 3, 4, 3, 4, 3, 4, 5, 6};

} // namespace

class TestCheckPositions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void unmodifiedFixturesMatch_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("suffix");
        for (const char* f : {"qwen2vl-tiny", "qwen25vl-tiny", "qwen3vl-tiny", "qwen35-tiny"})
            for (const char* s : {"", "_mid", "_multi"})
                QTest::newRow(qPrintable(QString(f) + s)) << QString(f) << QString(s);
        QTest::newRow("qwen35-tiny_video") << QString("qwen35-tiny") << QString("_video");
    }
    void unmodifiedFixturesMatch()
    {
        QFETCH(QString, family);
        QFETCH(QString, suffix);
        const std::vector<SampleCheck> r = checkBatch(fixtureDump(family, suffix), configOf(family), false);
        QCOMPARE(r.size(), size_t(1));
        QVERIFY2(r[0].kind == FaultKind::None, qPrintable(r[0].detail + " " + r[0].segment));
    }

    // GLM-V and PaddleOCR-VL: transformers' own positions for every fixture case (images, two images, text
    // only, GLM's per-frame video) match the rule, which finds vision tokens by mm_token_type_ids.
    void typedFamiliesMatch_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* f :
             {"glm4v-tiny/dump", "glm4v-tiny/dump_mid", "glm4v-tiny/dump_multi", "glm4v-tiny/dump_text", "glm4v-tiny/dump_video",
              "paddleocr-vl-tiny/dump", "paddleocr-vl-tiny/dump_mid", "paddleocr-vl-tiny/dump_multi", "paddleocr-vl-tiny/dump_text"})
            QTest::newRow(f) << QString(f);
    }
    void typedFamiliesMatch()
    {
        QFETCH(QString, file);
        const QString path = QString(ROPESCOPE_TEST_DATA) + "/positions/" + file + ".safetensors";
        const PositionRule rule = ruleForModel(QFileInfo(path).path());
        QCOMPARE(rule.family, QString(file.startsWith("glm") ? "glm-v" : "paddleocr-vl"));
        const SampleCheck c = checkBatch(readDumpBatch(path), rule, false)[0];
        QVERIFY2(c.kind == FaultKind::None, qPrintable(c.detail + " " + c.segment));
    }

    // Without mm_token_type_ids transformers silently gives GLM-V 1-D positions: the dump is refused (the rule
    // needs them), and positions made that way are named 1-D when the types are there.
    void typedFamiliesNeedTokenTypes()
    {
        const QString path = QString(ROPESCOPE_TEST_DATA) + "/positions/glm4v-tiny/dump_multi.safetensors";
        const PositionRule rule = *ruleForFamily("glm-v");
        DumpBatch d = readDumpBatch(path);
        DumpBatch untyped = d;
        untyped.tensors.erase("mm_token_type_ids");
        try {
            checkBatch(untyped, rule, false);
            QFAIL("accepted");
        } catch (const BadInputFile& e) {
            QVERIFY2(QString(e.what()).contains("no 'mm_token_type_ids'"), e.what());
        }
        DumpTensor& pos = d.tensors["position_ids"];
        for (int a = 0; a < 3; ++a)
            for (int64_t i = 0; i < pos.shape[2]; ++i)
                positionAt(pos, a, 0, i) = i;
        QCOMPARE(checkBatch(d, rule, false)[0].kind, FaultKind::OneD);
    }

    // transformers 5's generate builds [4, B, L]: row 0 the plain text position 0..L-1, then t, h, w.
    void fourRowTables()
    {
        DumpBatch d = fixtureDump("qwen35-tiny", "_video");
        const DumpTensor three = d.tensors["position_ids"];
        const int64_t L = three.shape[2];
        std::vector<int64_t> four;
        for (int64_t i = 0; i < L; ++i)
            four.push_back(i);
        four.insert(four.end(), three.ints.begin(), three.ints.end());
        d.tensors["position_ids"] = ints({4, 1, L}, four);
        QCOMPARE(checkBatch(d, configOf("qwen35-tiny"), false)[0].kind, FaultKind::None);
        d.tensors["position_ids"].ints[5] = 9; // the text row's sixth token
        const SampleCheck c = checkBatch(d, configOf("qwen35-tiny"), false)[0];
        QCOMPARE(c.kind, FaultKind::Other);
        QCOMPARE(c.axis, 3);
        QCOMPARE(c.firstToken, int64_t(5));
    }

    void oneDimensionalPositionsAreNamed()
    {
        DumpBatch d = fixtureDump("qwen2vl-tiny", "_multi");
        DumpTensor& pos = d.tensors["position_ids"];
        for (int a = 0; a < 3; ++a)
            for (int64_t i = 0; i < pos.shape[2]; ++i)
                positionAt(pos, a, 0, i) = i; // what a text-only pipeline gives every token
        const SampleCheck c = checkBatch(d, configOf("qwen2vl-tiny"), false)[0];
        QCOMPARE(c.kind, FaultKind::OneD);
        QCOMPARE(c.segment, QString("image 0"));
    }

    // A left-padded batch whose positions counted the padding: two rows, the second padded by 3.
    void paddingOffsetIsNamed()
    {
        const DumpBatch one = fixtureDump("qwen25vl-tiny", "");
        const DumpTensor& ids = one.tensors.at("input_ids");
        const DumpTensor& pos = one.tensors.at("position_ids");
        const int64_t L = ids.shape[1], pad = 3, width = L + pad;
        std::vector<int64_t> batchIds, mask, positions(static_cast<size_t>(3 * 2 * width), 1);
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t i = 0; i < width; ++i) {
                const bool padded = b == 1 && i < pad;
                const int64_t src = b == 0 ? std::min(i, L - 1) : i - pad;
                batchIds.push_back(padded ? 0 : ids.ints[static_cast<size_t>(src)]);
                mask.push_back(padded || (b == 0 && i >= L) ? 0 : 1);
                for (int a = 0; a < 3; ++a)
                    if (!padded && !(b == 0 && i >= L))
                        positions[static_cast<size_t>((a * 2 + b) * width + i)] =
                            pos.ints[static_cast<size_t>(a * L + src)] + (b == 1 ? pad : 0);
            }
        DumpBatch d;
        d.name = "padded";
        d.tensors["input_ids"] = ints({2, width}, batchIds);
        d.tensors["attention_mask"] = ints({2, width}, mask);
        d.tensors["position_ids"] = ints({3, 2, width}, positions);
        d.tensors["image_grid_thw"] = ints({2, 3}, {1, 4, 6, 1, 4, 6});
        const std::vector<SampleCheck> r = checkBatch(d, configOf("qwen25vl-tiny"), false);
        QCOMPARE(r[0].kind, FaultKind::None); // the right-padded row is right
        QCOMPARE(r[1].kind, FaultKind::Offset);
        QCOMPARE(r[1].firstToken, pad);
        QVERIFY2(r[1].detail.contains("3 above"), qPrintable(r[1].detail));
    }

    void ropeDeltasAreChecked()
    {
        DumpBatch d = fixtureDump("qwen3vl-tiny", "_mid");
        d.tensors["rope_deltas"].ints[0] += 1;
        const SampleCheck c = checkBatch(d, configOf("qwen3vl-tiny"), false)[0];
        QCOMPARE(c.kind, FaultKind::RopeDeltas);
        QCOMPARE(c.got, c.expected + 1);
    }

    void qwen25TemporalIds()
    {
        const PositionRule config = configOf("qwen25vl-tiny");
        // By hand, 0.5 s per grid: frame 0 at t 3, frame 1 at t 4; the text after at 7, 8 (max 6 + 1).
        const std::vector<int64_t> right{0, 1, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 6, 7};
        const std::vector<int64_t> h{0, 1, 2, 3, 3, 4, 4, 3, 3, 4, 4, 5, 6, 7}, w{0, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 5, 6, 7};
        QCOMPARE(checkBatch(qwen25Video(0.5, right, h, w), config, false)[0].kind, FaultKind::None);
        // second_per_grid_ts truncated to 0 (transformers #48669): t constant within the video.
        const std::vector<int64_t> truncated{0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 5, 6, 7};
        const SampleCheck c = checkBatch(qwen25Video(0.5, truncated, h, w), config, false)[0];
        QCOMPARE(c.kind, FaultKind::Temporal);
        QCOMPARE(c.segment, QString("video 0"));
        QVERIFY2(c.detail.contains("t is constant within video 0; the rule steps it by 1"), qPrintable(c.detail));
        // 2 s per grid: the rule steps by floor(2 * 2) = 4; a pipeline stepping by 1 (Qwen2-VL's rule) is named.
        const std::vector<int64_t> h2{0, 1, 2, 3, 3, 4, 4, 3, 3, 4, 4, 8, 9, 10}, w2{0, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 8, 9, 10};
        const std::vector<int64_t> byFour{0, 1, 2, 3, 3, 3, 3, 7, 7, 7, 7, 8, 9, 10};
        QCOMPARE(checkBatch(qwen25Video(2.0, byFour, h2, w2), config, false)[0].kind, FaultKind::None);
        const std::vector<int64_t> byOne{0, 1, 2, 3, 3, 3, 3, 4, 4, 4, 4, 8, 9, 10};
        const SampleCheck s = checkBatch(qwen25Video(2.0, byOne, h2, w2), config, false)[0];
        QCOMPARE(s.kind, FaultKind::Temporal);
        QVERIFY2(s.detail.contains("t steps by 1 a frame in video 0; the rule steps it by 4"), qPrintable(s.detail));
    }

    // The command itself: exit 0 / 1 / 2, the kind in its words, the report and its figures, a batch item.
    void commandLineAndBatch()
    {
        QTemporaryDir dir;
        const QString model = kFixtures + "qwen2vl-tiny";
        QVERIFY(QDir().mkpath(dir.filePath("dump")));
        QVERIFY(writeDump(dir.filePath("dump/b0.safetensors"), fixtureDump("qwen2vl-tiny", "")));
        DumpBatch wrong = fixtureDump("qwen2vl-tiny", "_multi");
        for (int a = 0; a < 3; ++a)
            for (int64_t i = 0; i < wrong.tensors["position_ids"].shape[2]; ++i)
                positionAt(wrong.tensors["position_ids"], a, 0, i) = i;
        QVERIFY(writeDump(dir.filePath("dump/b1.safetensors"), wrong));

        const RopescopeRun good = runRopescope({"check-positions", dir.filePath("dump/b0.safetensors"), "--model", model}, false);
        QCOMPARE(good.exitCode, 0);
        QVERIFY2(good.out.contains("summary: 1 checked, 0 differ"), good.out.constData());
        const RopescopeRun both =
            runRopescope({"check-positions", dir.filePath("dump"), "--model", model, "--report", dir.filePath("report")}, false);
        QCOMPARE(both.exitCode, 1);
        QVERIFY2(both.out.contains("b1.safetensors row 0: 1-d") && both.out.contains("summary: 2 checked, 1 differ: 1-d 1"),
                 both.out.constData());
        QFile report(dir.filePath("report/report.json"));
        QVERIFY(report.open(QIODevice::ReadOnly));
        const QJsonObject json = QJsonDocument::fromJson(report.readAll()).object();
        QCOMPARE(json["samples"].toInt(), 2);
        QCOMPARE(json["differing_samples"].toArray().first().toObject()["kind"].toString(), QString("1-d"));
        for (const char* ext : {"png", "svg", "pdf"})
            QVERIFY2(QFileInfo(dir.filePath(QString("report/sample_0_b1_row0.") + ext)).size() > 1000, ext);

        QFile truncated(dir.filePath("cut.safetensors"));
        QVERIFY(truncated.open(QIODevice::WriteOnly));
        QFile whole(dir.filePath("dump/b0.safetensors"));
        QVERIFY(whole.open(QIODevice::ReadOnly));
        truncated.write(whole.readAll().chopped(9));
        truncated.close();
        const RopescopeRun cut = runRopescope({"check-positions", dir.filePath("cut.safetensors"), "--model", model}, false);
        QCOMPARE(cut.exitCode, 2);
        QCOMPARE(cut.err.count('\n'), 1);
        QCOMPARE(runRopescope({"check-positions", dir.filePath("dump"), "--family", "qwen9"}, false).exitCode, 2);

        QFile job(dir.filePath("job.json"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QJsonDocument(
                      QJsonObject{
                          {"items",
                           QJsonArray{QJsonObject{
                               {"type", "check-positions"}, {"dump", dir.filePath("dump")}, {"model", model}, {"output", "check.json"}}}}})
                      .toJson());
        job.close();
        QCOMPARE(runRopescope({"batch", dir.filePath("job.json"), "--output", dir.filePath("out")}, false).exitCode, 0);
        QFile item(dir.filePath("out/check.json"));
        QVERIFY(item.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(item.readAll()).object()["kinds"].toObject()["1-d"].toInt(), 1);
    }

    // .pt: torch.save of a dict of tensors, written here by LibTorch's pickle_save (the archive torch.load reads),
    // read back through the dump reader: the same check as the safetensors dump. Another object is refused.
    void torchSaveDumps()
    {
        const DumpBatch d = fixtureDump("qwen3vl-tiny", "_multi");
        c10::Dict<std::string, torch::Tensor> dict;
        for (const auto& [name, t] : d.tensors)
            dict.insert(name, torch::tensor(t.ints, torch::kInt64).reshape(t.shape));
        QTemporaryDir dir;
        const auto write = [&](const QString& name, const c10::IValue& value) {
            const std::vector<char> bytes = torch::pickle_save(value);
            QFile f(dir.filePath(name));
            return f.open(QIODevice::WriteOnly) &&
                f.write(bytes.data(), static_cast<qint64>(bytes.size())) == static_cast<qint64>(bytes.size());
        };
        QVERIFY(write("batch.pt", c10::IValue(dict)));
        const DumpBatch back = readDumpBatch(dir.filePath("batch.pt"));
        QCOMPARE(back.tensors.size(), d.tensors.size());
        QCOMPARE(back.tensors.at("position_ids").ints, d.tensors.at("position_ids").ints);
        QCOMPARE(checkBatch(back, configOf("qwen3vl-tiny"), false)[0].kind, FaultKind::None);
        QVERIFY(write("list.pt", c10::IValue(std::vector<int64_t>{1, 2, 3})));
        QVERIFY_THROWS_EXCEPTION(BadInputFile, readDumpBatch(dir.filePath("list.pt")));
        QFile junk(dir.filePath("junk.pt"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("PK\x03\x04 not really");
        junk.close();
        QVERIFY_THROWS_EXCEPTION(BadInputFile, readDumpBatch(dir.filePath("junk.pt")));
    }

    // torch.save's own files (Debian's python3-torch 1.13, torch_save/make.py): the zip and the legacy form, plain
    // and as views (an offset into a larger storage, column-major grids, a stride-0 mask, int32 ids, float32
    // rope_deltas) beside entries not read. Each reads back to the numbers of the fixture's safetensors, and only
    // the checked keys are read. On the old reader (LibTorch's pickle_load) too these read; the hostile ones below
    // are what it failed on.
    void torchSaveFilesReadBack_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* f :
             {"dump_zip.pt", "dump_legacy.pt", "dump_views_zip.pt", "dump_views_legacy.pt", "dump_ordered.pt", "dump_deflated_zip.pt"})
            QTest::newRow(f) << QString(f);
    }
    void torchSaveFilesReadBack()
    {
        QFETCH(QString, file);
        const DumpBatch expected = fixtureDump("qwen3vl-tiny", "_multi");
        const DumpBatch back = readDumpBatch(kTorchSave + file);
        QCOMPARE(back.tensors.size(), expected.tensors.size());
        for (const auto& [name, t] : expected.tensors) {
            QVERIFY2(back.tensors.count(name), name.c_str());
            const DumpTensor& b = back.tensors.at(name);
            QCOMPARE(b.shape, t.shape);
            QVERIFY2(b.integral, name.c_str());
            QCOMPARE(int64_t(b.held()), t.numel());
            for (size_t k = 0; k < b.held(); ++k)
                QCOMPARE(b.intAt(k), t.ints[k]);
            QVERIFY2(b.reals.empty(), name.c_str()); // one copy of each element
        }
        // In the file's own width (issue 54 item 4): the views files save input_ids as int32, kept 4 bytes each.
        const DumpTensor& ids = back.tensors.at("input_ids");
        if (file.startsWith("dump_views")) {
            QCOMPARE(ids.width, 4);
            QVERIFY(ids.ints.empty());
            QCOMPARE(ids.narrow.size(), size_t(4 * ids.numel()));
        } else {
            QCOMPARE(ids.width, 8);
        }
        QVERIFY(!back.tensors.count("pixel_values"));
        QCOMPARE(checkBatch(back, configOf("qwen3vl-tiny"), false)[0].kind, FaultKind::None);
    }

    // Issue 54's repros of a .pt that crashed check-positions (SIGSEGV: an offset of 2^40, REDUCE/BUILD/NEWOBJ
    // on an empty stack, tuples nested a million deep) or read the heap (4,096 elements declared on 8 bytes, a
    // negative offset, a view past its storage), and what is near them: each is one line naming the file and
    // what is wrong (hostile.tsv), from the reader and from the command (exit 2). On the old code the command
    // died with signal 11 or printed LibTorch's words without the file.
    void hostileTorchSavesAreRefused()
    {
        QFile list(kTorchSave + "hostile.tsv");
        QVERIFY(list.open(QIODevice::ReadOnly));
        int cases = 0;
        for (const QByteArray& line : list.readAll().split('\n')) {
            if (line.isEmpty())
                continue;
            const QString path = kTorchSave + QString::fromUtf8(line.left(line.indexOf('\t')));
            const QString message = QString::fromUtf8(line.mid(line.indexOf('\t') + 1));
            try {
                readDumpBatch(path);
                QFAIL(qPrintable(path + ": accepted"));
            } catch (const BadInputFile& e) {
                const QString what = e.what();
                QVERIFY2(what.startsWith(path + ": ") && what.contains(message) && !what.contains('\n'), e.what());
            }
            const RopescopeRun run = runRopescope({"check-positions", path, "--family", "qwen3-vl"}, false);
            QVERIFY2(run.exitCode == 2, qPrintable(path + ": exit " + QString::number(run.exitCode) + " " + run.err));
            QVERIFY2(run.err.count('\n') == 1 && run.err.contains(path.toUtf8()) && run.err.contains(message.toUtf8()),
                     run.err.constData());
            ++cases;
        }
        QCOMPARE(cases, 20);
    }

    // Whole-number types are read as whole numbers, not through double: an id of 2^62 is outside the vocabulary
    // (the old reader called it "numbers that are not whole").
    void hugeIdsAreNamed()
    {
        QTemporaryDir dir;
        DumpBatch d = fixtureDump("qwen2vl-tiny", "");
        d.tensors["input_ids"].ints[2] = int64_t(1) << 62;
        QVERIFY(writeDump(dir.filePath("huge.safetensors"), d));
        try {
            checkBatch(readDumpBatch(dir.filePath("huge.safetensors")), configOf("qwen2vl-tiny"), false);
            QFAIL("accepted");
        } catch (const BadInputFile& e) {
            QVERIFY2(QString(e.what()).contains("'input_ids' holds 4611686018427387904, outside the vocabulary"), e.what());
        }
    }

    // A dangling link with a dump's name is refused naming it, alone or beside good files (the old listing
    // skipped it: "the folder holds no ... files", or silently fewer batches).
    void danglingLinksAreNamed()
    {
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(dir.filePath("dump")));
        QVERIFY(QFile::link(dir.filePath("gone.safetensors"), dir.filePath("dump/b1.safetensors")));
        const auto refused = [&](const QString& needle) {
            const RopescopeRun run = runRopescope({"check-positions", dir.filePath("dump"), "--family", "qwen2-vl"}, false);
            return run.exitCode == 2 && run.err.count('\n') == 1 && run.err.contains(needle.toUtf8());
        };
        QVERIFY(refused(dir.filePath("dump/b1.safetensors") + ": a symbolic link to " + dir.filePath("gone.safetensors") +
                        ", which does not exist"));
        QVERIFY(writeDump(dir.filePath("dump/b0.safetensors"), fixtureDump("qwen2vl-tiny", "")));
        QVERIFY(refused("b1.safetensors: a symbolic link to"));
    }

    // Memory: an .npz's members are counted on their declared shapes before they are inflated (a deflated
    // 2^25 + 1 element array of zeros, 33 KB packed, is refused without inflating it), a key twice is refused, and
    // keys the check does not read are never inflated. On the old code the first took 16 bytes an element.
    void npzIsBoundedBeforeInflating()
    {
        const QString dir = QString(ROPESCOPE_TEST_DATA) + "/positions/npz/";
        const auto message = [](const QString& path) {
            try {
                readDumpBatch(path);
            } catch (const BadInputFile& e) {
                return QString(e.what());
            }
            return QString("accepted");
        };
        const QString big = message(dir + "deflated_big.npz");
        QVERIFY2(big.contains("'input_ids' brings the elements read past 33554432"), qPrintable(big));
        const QString twice = message(dir + "twice.npz");
        QVERIFY2(twice.contains("the archive holds 'input_ids' twice"), qPrintable(twice));
        const DumpBatch skipped = readDumpBatch(dir + "unread_big.npz"); // a 2^28-element pixel_values, never inflated
        QCOMPARE(skipped.tensors.size(), size_t(1));
        QCOMPARE(skipped.tensors.at("input_ids").ints, (std::vector<int64_t>{1, 2, 3}));
    }

    // Samples stream: the check keeps only the first differing samples it lists, and counts every one.
    void differingSamplesAreCountedNotKept()
    {
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(dir.filePath("dump")));
        DumpBatch wrong = fixtureDump("qwen2vl-tiny", "_multi");
        for (int a = 0; a < 3; ++a)
            for (int64_t i = 0; i < wrong.tensors["position_ids"].shape[2]; ++i)
                positionAt(wrong.tensors["position_ids"], a, 0, i) = i;
        for (int k = 0; k < 5; ++k)
            QVERIFY(writeDump(dir.filePath(QString("dump/b%1.safetensors").arg(k)), wrong));
        const DumpCheck check = checkDump(dir.filePath("dump"), configOf("qwen2vl-tiny"), 1, 2);
        QCOMPARE(check.samples, int64_t(5));
        QCOMPARE(check.differingTotal, int64_t(5));
        QCOMPARE(check.differing.size(), size_t(2));
        QCOMPARE(check.kinds.at("1-d"), int64_t(5));
        QVERIFY(!check.differing[0].gotPositions.empty()); // the figure's sample keeps its positions
        QVERIFY(check.differing[1].gotPositions.empty());
        const QJsonObject json = dumpCheckJson(check, "qwen2-vl", dir.filePath("dump"));
        QCOMPARE(json["differing"].toInt(), 5);
        QCOMPARE(json["differing_samples_listed"].toInt(), 2);
        QCOMPARE(json["differing_samples"].toArray().size(), 2);
    }

    // Gemma 3 and 4 give every token one sequential position: transformers' own position_ids (0..L-1) of every
    // fixture case match the rule read from the model's config.json, [1, L] kept as one row of positions.
    void gemmaFixturesMatch_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("file");
        for (const char* model : {"gemma3-tiny", "gemma4-tiny"})
            for (const QFileInfo& f : QDir(kGemma + model).entryInfoList({"case*.safetensors"}, QDir::Files, QDir::Name))
                QTest::newRow(qPrintable(QString(model) + "/" + f.fileName())) << QString(model) << f.filePath();
    }
    void gemmaFixturesMatch()
    {
        QFETCH(QString, model);
        QFETCH(QString, file);
        const PositionRule rule = ruleForModel(kGemma + model);
        QCOMPARE(rule.family, model.left(6));
        QCOMPARE(rule.config.text.vocab, 256); // the tiny model's, so ids are checked
        QCOMPARE(rule.config.imageToken, 250);
        const SampleCheck c = checkBatch(readDumpBatch(file), rule, true)[0];
        QVERIFY2(c.kind == FaultKind::None, qPrintable(c.detail + " " + c.segment));
        QCOMPARE(c.components, 1);
        QCOMPARE(c.sequences, int64_t(1));
        QCOMPARE(static_cast<int64_t>(c.gotPositions.size()), c.tokens);
        QCOMPARE(pipelineTable(c).components(), 1);
    }

    // One batch of Gemma 4's main case: right- and left-padded rows whose positions follow generate's rule
    // (attention_mask.cumsum(-1) - 1, padding 1) match; positions counting the padding are an offset; a packed row
    // (the case twice, restarting at 0) matches; a wrong image token in its second sequence is named.
    void gemmaPaddingAndPacking()
    {
        const DumpBatch one = readDumpBatch(kGemma + "gemma4-tiny/case.safetensors");
        const std::vector<int64_t>& caseIds = one.tensors.at("input_ids").ints;
        const size_t n = caseIds.size(), width = 2 * n;
        std::vector<int64_t> twice = caseIds, restarting = counting(n);
        twice.insert(twice.end(), caseIds.begin(), caseIds.end());
        restarting.insert(restarting.end(), restarting.begin(), restarting.end());
        std::vector<int64_t> wrong = restarting;
        const auto image = static_cast<int64_t>(n + 11); // the second sequence's second image token
        QCOMPARE(twice[static_cast<size_t>(image)], int64_t(250));
        wrong[static_cast<size_t>(image)] += 1;
        std::vector<int64_t> ids, mask, pos;
        gemmaRow(ids, mask, pos, caseIds, counting(n), 0, width);             // right-padded
        gemmaRow(ids, mask, pos, caseIds, counting(n), n, width);             // left-padded, the cumsum rule
        gemmaRow(ids, mask, pos, caseIds, counting(n, int64_t(n)), n, width); // left-padded, arange(L)
        gemmaRow(ids, mask, pos, twice, restarting, 0, width);                // packed
        gemmaRow(ids, mask, pos, twice, wrong, 0, width);
        DumpBatch d;
        d.name = "gemma batch";
        d.tensors["input_ids"] = ints({5, static_cast<int64_t>(width)}, ids);
        d.tensors["attention_mask"] = ints({5, static_cast<int64_t>(width)}, mask);
        d.tensors["position_ids"] = ints({5, static_cast<int64_t>(width)}, pos);
        const PositionRule rule = ruleForModel(kGemma + "gemma4-tiny");
        const std::vector<SampleCheck> r = checkBatch(d, rule, false);
        QCOMPARE(r[0].kind, FaultKind::None);
        QCOMPARE(r[1].kind, FaultKind::None);
        QCOMPARE(r[2].kind, FaultKind::Offset);
        QCOMPARE(r[2].firstToken, static_cast<int64_t>(n));
        QCOMPARE(r[2].detail, QString("every position is %1 above the rule's").arg(n));
        QCOMPARE(r[3].kind, FaultKind::None);
        QCOMPARE(r[3].sequences, int64_t(2));
        QCOMPARE(r[4].kind, FaultKind::Other);
        QCOMPARE(r[4].firstToken, image);
        QCOMPARE(r[4].segment, QString("image 1"));
        QCOMPARE(r[4].got, int64_t(12));
        QCOMPARE(r[4].expected, int64_t(11));
        QCOMPARE(r[4].differing, int64_t(1));
        QCOMPARE(axisName(r[4]), QString("position"));
        // [3, B, L] is another family's table.
        d.tensors["position_ids"] = ints({3, 5, static_cast<int64_t>(width)}, std::vector<int64_t>(3 * pos.size(), 0));
        QVERIFY_THROWS_EXCEPTION(BadInputFile, checkBatch(d, rule, false));
    }

    // The command for Gemma: --model and --family, the token named in its words, and bad input in one line, exit 2.
    void gemmaCommandLine()
    {
        const QString model = kGemma + "gemma4-tiny";
        const RopescopeRun fixtures = runRopescope({"check-positions", model, "--model", model}, false);
        QCOMPARE(fixtures.exitCode, 0);
        QVERIFY2(fixtures.out.contains("against gemma4") && fixtures.out.contains("summary: 5 checked, 0 differ"),
                 fixtures.out.constData());
        QCOMPARE(runRopescope({"check-positions", kGemma + "gemma3-tiny", "--family", "gemma3"}, false).exitCode, 0);
        QTemporaryDir dir;
        DumpBatch d = readDumpBatch(kGemma + "gemma4-tiny/case.safetensors");
        d.tensors["position_ids"].ints[9] = 99; // the boi before the image
        QVERIFY(writeDump(dir.filePath("wrong.safetensors"), d));
        const RopescopeRun wrong = runRopescope({"check-positions", dir.filePath("wrong.safetensors"), "--model", model}, false);
        QCOMPARE(wrong.exitCode, 1);
        QVERIFY2(wrong.out.contains("wrong.safetensors row 0: other (1 of 25 tokens differ); first at token 9 (boi of image 0): got 99, "
                                    "expected 9"),
                 wrong.out.constData());
        d.tensors["input_ids"].ints[10] = 258880; // the Hub's image token, outside the tiny vocabulary
        QVERIFY(writeDump(dir.filePath("hub.safetensors"), d));
        const RopescopeRun hub = runRopescope({"check-positions", dir.filePath("hub.safetensors"), "--model", model}, false);
        QCOMPARE(hub.exitCode, 2);
        QCOMPARE(hub.err.count('\n'), 1);
        QVERIFY2(hub.err.contains("'input_ids' holds 258880, outside the vocabulary (0..255)"), hub.err.constData());
        d.tensors["input_ids"].ints[10] = 250;
        d.tensors["image_grid_thw"] = ints({1, 3}, {1, 4, 6});
        QVERIFY(writeDump(dir.filePath("grid.safetensors"), d));
        const RopescopeRun grid = runRopescope({"check-positions", dir.filePath("grid.safetensors"), "--family", "gemma4"}, false);
        QCOMPARE(grid.exitCode, 2);
        QCOMPARE(grid.err.count('\n'), 1);
        QVERIFY2(grid.err.contains("'image_grid_thw': gemma4 gives every token one sequential position and reads no grids"),
                 grid.err.constData());
    }

    void badDumpsAreRefused_data()
    {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("no position_ids") << "drop position_ids"
                                         << "no 'position_ids'";
        QTest::newRow("wrong shape") << "shape"
                                     << "'position_ids' must be [3, B, L] or [4, B, L]";
        QTest::newRow("grid rows left") << "extra grid"
                                        << "but input_ids has 1 image and 0 video token runs";
        QTest::newRow("fractional ids") << "fraction"
                                        << "'input_ids' holds numbers that are not whole";
        QTest::newRow("ids out of range") << "range"
                                          << "outside the vocabulary";
    }
    void badDumpsAreRefused()
    {
        QFETCH(QString, what);
        QFETCH(QString, message);
        DumpBatch d = fixtureDump("qwen2vl-tiny", "");
        if (what == "drop position_ids")
            d.tensors.erase("position_ids");
        else if (what == "shape")
            d.tensors["position_ids"].shape = {1, 3, d.tensors["position_ids"].shape[2]};
        else if (what == "extra grid")
            d.tensors["image_grid_thw"] = ints({2, 3}, {1, 4, 6, 1, 4, 6});
        else if (what == "range")
            d.tensors["input_ids"].ints[3] = 1 << 30;
        else
            d.tensors["input_ids"].integral = false;
        try {
            checkBatch(d, configOf("qwen2vl-tiny"), false);
            QFAIL("accepted");
        } catch (const BadInputFile& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestCheckPositions)
#include "test_check_positions.moc"

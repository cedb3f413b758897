#include "app/cli/bench_positions.h"

#include "app/cli/cli_error.h"
#include "app/cli/output.h"
#include "core/model/analysis/position_dump.h"
#include "core/model/engine/safetensors.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <cstring>

#include <sys/resource.h>

namespace ropescope::cli {
namespace {

constexpr int kBatches = 125, kRows = 8;
constexpr double kGoalMs = 5000;

QByteArray int64Bytes(const std::vector<int64_t>& v)
{
    QByteArray b(static_cast<qsizetype>(v.size() * sizeof(int64_t)), Qt::Uninitialized);
    std::memcpy(b.data(), v.data(), static_cast<size_t>(b.size()));
    return b;
}

// One batch: row r has 20 + 3r text tokens before the image, so the rows differ in length and the shorter
// ones are left-padded; positions are the rule's own (the check then finds nothing, and does all its work).
model::DumpBatch benchBatch(int index, const model::PositionRule& rule)
{
    const model::ModelConfig& config = rule.config;
    std::vector<std::vector<int64_t>> rows;
    for (int r = 0; r < kRows; ++r) {
        std::vector<int64_t> ids(static_cast<size_t>(20 + 3 * ((r + index) % 8)), 1000);
        ids.push_back(config.visionStart);
        ids.insert(ids.end(), 14 * 14, config.imageToken);
        ids.push_back(config.visionEnd);
        ids.insert(ids.end(), 12, 1001);
        ids.push_back(config.visionStart);
        ids.insert(ids.end(), 4 * 8 * 8, config.videoToken);
        ids.push_back(config.visionEnd);
        ids.insert(ids.end(), 30, 1002);
        rows.push_back(std::move(ids));
    }
    size_t width = 0;
    for (const auto& r : rows)
        width = std::max(width, r.size());
    std::vector<int64_t> ids, mask, images, videos;
    for (const auto& r : rows) {
        const size_t pad = width - r.size();
        for (size_t i = 0; i < width; ++i) {
            ids.push_back(i < pad ? 0 : r[i - pad]);
            mask.push_back(i < pad ? 0 : 1);
        }
        images.insert(images.end(), {1, 28, 28});
        videos.insert(videos.end(), {4, 16, 16});
    }
    auto tensor = [](std::vector<int64_t> shape, const std::vector<int64_t>& v) {
        model::DumpTensor t;
        t.shape = std::move(shape);
        t.ints = v;
        t.reals.assign(v.begin(), v.end());
        return t;
    };
    const auto L = static_cast<int64_t>(width);
    model::DumpBatch b;
    b.name = QString("batch_%1").arg(index);
    b.tensors["input_ids"] = tensor({kRows, L}, ids);
    b.tensors["attention_mask"] = tensor({kRows, L}, mask);
    b.tensors["image_grid_thw"] = tensor({kRows, 3}, images);
    b.tensors["video_grid_thw"] = tensor({kRows, 3}, videos);
    b.tensors["position_ids"] = tensor({3, kRows, L}, std::vector<int64_t>(static_cast<size_t>(3 * kRows * L), 1));
    // The rule's positions into the attended places (padding keeps 1, as transformers leaves it).
    const std::vector<model::SampleCheck> checks = model::checkBatch(b, rule, true);
    std::vector<int64_t>& pos = b.tensors["position_ids"].ints;
    for (int r = 0; r < kRows; ++r) {
        const model::SampleCheck& c = checks[static_cast<size_t>(r)];
        const int64_t pad = L - c.tokens;
        for (int a = 0; a < 3; ++a)
            for (int64_t k = 0; k < c.tokens; ++k)
                pos[static_cast<size_t>((a * kRows + r) * L + pad + k)] = c.expectedPositions[static_cast<size_t>(a * c.tokens + k)];
    }
    return b;
}

void writeBatch(const QString& path, const model::DumpBatch& b)
{
    model::SafeTensorsWriter w;
    for (const auto& [name, t] : b.tensors) {
        const QByteArray bytes = int64Bytes(t.ints);
        w.add(name, model::DType::I64, t.shape, bytes.constData(), static_cast<size_t>(bytes.size()));
    }
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(w.bytes()) < 0)
        throw Failure(path.toStdString() + ": cannot write the bench's dump");
}

// The memory bench's batch: `rows` samples of 2 text tokens, an image of 2x2 merged tokens (grid 1x4x4) between
// vision_start and vision_end, as int32 (the dump's own dtype); every 10th row's positions are 1 too high, so a
// tenth of the samples differ (kind offset) and the differing list is exercised.
void writeMemoryBatch(const QString& path, int rows, const model::PositionRule& rule)
{
    const model::ModelConfig& config = rule.config;
    const std::vector<int64_t> sample{
        1000, 1001, config.visionStart, config.imageToken, config.imageToken, config.imageToken, config.imageToken, config.visionEnd};
    const auto L = static_cast<int64_t>(sample.size());
    model::DumpBatch one;
    one.name = "template";
    auto tensor = [](std::vector<int64_t> shape, const std::vector<int64_t>& v) {
        model::DumpTensor t;
        t.shape = std::move(shape);
        t.ints = v;
        return t;
    };
    one.tensors["input_ids"] = tensor({1, L}, sample);
    one.tensors["image_grid_thw"] = tensor({1, 3}, {1, 4, 4});
    one.tensors["position_ids"] = tensor({3, 1, L}, std::vector<int64_t>(static_cast<size_t>(3 * L), 0));
    const std::vector<int64_t> expected = model::checkBatch(one, rule, true).at(0).expectedPositions; // [3, L]
    std::vector<int32_t> ids, grids, pos(static_cast<size_t>(3 * rows * L));
    for (int r = 0; r < rows; ++r) {
        for (int64_t v : sample)
            ids.push_back(static_cast<int32_t>(v));
        grids.insert(grids.end(), {1, 4, 4});
        for (int a = 0; a < 3; ++a)
            for (int64_t k = 0; k < L; ++k)
                pos[static_cast<size_t>((a * rows + r) * L + k)] =
                    static_cast<int32_t>(expected[static_cast<size_t>(a * L + k)] + (r % 10 == 0 ? 1 : 0));
    }
    model::SafeTensorsWriter w;
    w.add("input_ids", model::DType::I32, {rows, L}, ids.data(), ids.size() * sizeof(int32_t));
    w.add("image_grid_thw", model::DType::I32, {rows, 3}, grids.data(), grids.size() * sizeof(int32_t));
    w.add("position_ids", model::DType::I32, {3, rows, L}, pos.data(), pos.size() * sizeof(int32_t));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(w.bytes()) < 0)
        throw Failure(path.toStdString() + ": cannot write the bench's dump");
}

} // namespace

int benchPositionsMemory(const QCommandLineParser& parser)
{
    constexpr int kFiles = 100, kRowsPerFile = 10000;
    constexpr double kGoalMb = 500;
    QTemporaryDir dir;
    if (!dir.isValid() || !QDir().mkpath(dir.filePath("dump")))
        throw Failure("bench positions-memory: cannot create a temporary folder");
    const model::PositionRule rule = *model::ruleForFamily("qwen2-vl");
    for (int i = 0; i < kFiles; ++i)
        writeMemoryBatch(dir.filePath(QString("dump/batch_%1.safetensors").arg(i, 4, 10, QChar('0'))), kRowsPerFile, rule);
    // The real command in a child process, so that its peak resident memory is its own (getrusage of the
    // children: the largest peak of those waited for, and it is the only one).
    QProcess child;
    child.setProgram(QCoreApplication::applicationFilePath());
    child.setArguments({"check-positions", dir.filePath("dump"), "--family", "qwen2-vl", "--report", dir.filePath("report")});
    QElapsedTimer timer;
    timer.start();
    child.start();
    if (!child.waitForFinished(-1) || child.exitStatus() != QProcess::NormalExit)
        throw Failure("bench positions-memory: check-positions did not finish: " + child.readAllStandardError().toStdString());
    const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    struct rusage usage { };
    getrusage(RUSAGE_CHILDREN, &usage);
    const double peakMb = static_cast<double>(usage.ru_maxrss) / 1024.0; // kilobytes on Linux
    const QByteArray out = child.readAllStandardOutput();
    const int64_t samples = int64_t(kFiles) * kRowsPerFile, differ = samples / 10;
    const QByteArray summary = QString("summary: %1 checked, %2 differ").arg(samples).arg(differ).toUtf8();
    if (child.exitCode() != 1 || !out.contains(summary))
        throw Failure("bench positions-memory: check-positions did not find the " + std::to_string(differ) +
                      " differing samples: " + out.right(400).toStdString() + child.readAllStandardError().right(400).toStdString());
    const QJsonObject row{
        {"suite", "positions-memory"}, {"samples", static_cast<double>(samples)}, {"batches", kFiles}, {"ms", ms}, {"peak_rss_mb", peakMb},
        {"goal_mb", kGoalMb},          {"within_goal", peakMb <= kGoalMb}};
    const QByteArray text = QString("check-positions --report: %1 Qwen2-VL samples (%2 int32 safetensors batches, a tenth differing) in "
                                    "%3 ms, peak resident memory %4 MB (goal %5 MB)%6\n")
                                .arg(samples)
                                .arg(kFiles)
                                .arg(ms, 0, 'f', 0)
                                .arg(peakMb, 0, 'f', 1)
                                .arg(kGoalMb, 0, 'f', 0)
                                .arg(peakMb <= kGoalMb ? "" : ": OVER THE GOAL")
                                .toUtf8();
    writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(QJsonArray{row}).toJson() : text);
    return peakMb <= kGoalMb ? 0 : kExitFailure;
}

int benchPositions(const QCommandLineParser& parser)
{
    QTemporaryDir dir;
    if (!dir.isValid())
        throw Failure("bench positions: cannot create a temporary folder");
    const model::PositionRule rule = *model::ruleForFamily("qwen2.5-vl");
    for (int i = 0; i < kBatches; ++i)
        writeBatch(dir.filePath(QString("batch_%1.safetensors").arg(i, 4, 10, QChar('0'))), benchBatch(i, rule));
    QElapsedTimer timer;
    timer.start();
    int64_t samples = 0, differing = 0;
    for (const QString& file : model::dumpFiles(dir.path()))
        for (const model::SampleCheck& c : model::checkBatch(model::readDumpBatch(file), rule, false)) {
            ++samples;
            differing += c.kind != model::FaultKind::None;
        }
    const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    if (differing != 0)
        throw Failure("bench positions: " + std::to_string(differing) + " samples differ from the rule that wrote them");
    const QJsonObject row{{"suite", "positions"}, {"samples", static_cast<double>(samples)},
                          {"batches", kBatches},  {"ms", ms},
                          {"goal_ms", kGoalMs},   {"within_goal", ms <= kGoalMs}};
    const QByteArray text =
        QString("check-positions: %1 Qwen2.5-VL samples (%2 safetensors batches, text + a 14x14 image + a 4x8x8 video each) "
                "read and checked in %3 ms (goal %4 ms)%5\n")
            .arg(samples)
            .arg(kBatches)
            .arg(ms, 0, 'f', 0)
            .arg(kGoalMs, 0, 'f', 0)
            .arg(ms <= kGoalMs ? "" : ": OVER THE GOAL")
            .toUtf8();
    writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(QJsonArray{row}).toJson() : text);
    return 0;
}

} // namespace ropescope::cli

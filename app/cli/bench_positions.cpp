#include "app/cli/bench_positions.h"

#include "app/cli/cli_error.h"
#include "app/cli/output.h"
#include "core/model/analysis/position_dump.h"
#include "core/model/engine/safetensors.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <cstring>

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

} // namespace

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

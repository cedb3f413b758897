// `ropescope bias`: text -> image attention averaged over many samples, per scheme and layer (the seeds'
// bias measurements), with its shards merged by `bias --merge`.
#include "attend_run.h"
#include "attend_schemes.h"
#include "bias_run.h"
#include "cli_error.h"
#include "commands.h"
#include "geometry_options.h"
#include "io/atomic_file.h"
#include "io/input_file.h"
#include "model/image_processor.h"
#include "model/positional_bias.h"
#include "model/question_set.h"
#include "model/synthetic_task.h"
#include "model/vlm.h"
#include "model_options.h"

#include <QDir>
#include <QImageReader>
#include <QJsonDocument>

#include <cstdio>
#include <map>

namespace ropescope::cli {
namespace {

SampleSource sampleSource(const QCommandLineParser& parser)
{
    const int given = parser.isSet("samples") + parser.isSet("questions") + parser.isSet("images");
    if (given != 1)
        throw UsageError("give one sample source: --samples N, --questions FILE.jsonl or --images DIR --question Q");
    if (parser.isSet("question") != parser.isSet("images"))
        throw UsageError("--images DIR and --question Q go together");
    for (const char* flag : {"seed", "rendering"})
        if (parser.isSet(flag) && !parser.isSet("samples"))
            throw UsageError(std::string("--") + flag + ": only with --samples (the synthetic stream)");
    SampleSource s;
    if (parser.isSet("samples")) {
        const int n = parseInteger(parser, "samples");
        if (n < 1 || n > 1000000)
            throw UsageError("--samples: 1..1000000");
        const uint64_t seed = parser.isSet("seed") ? static_cast<uint64_t>(parseInteger(parser, "seed")) : 1000003;
        const auto rendering = model::renderingFromName(parser.isSet("rendering") ? parser.value("rendering") : "grid");
        if (!rendering)
            throw UsageError("--rendering: grid, drawn or varied, not '" + parser.value("rendering").toStdString() + "'");
        s.total = n;
        s.description = QString("synthetic stream seed %1, rendering %2, %3 samples").arg(seed).arg(model::renderingName(*rendering)).arg(n);
        s.sampleAt = [seed, r = *rendering](int64_t k) {
            model::SyntheticSample sample = model::SyntheticTask::sample(seed, static_cast<uint64_t>(k), r);
            return std::pair<QImage, QString>{sample.image, sample.question};
        };
        return s;
    }
    std::vector<QString> questions;
    if (parser.isSet("questions")) {
        const std::vector<model::LabelledQuestion> set = runModelCommand([&] { return model::readQuestionSet(parser.value("questions")); });
        for (const model::LabelledQuestion& q : set) {
            s.files.push_back(q.image);
            questions.push_back(q.question);
        }
        s.description = "questions " + QFileInfo(parser.value("questions")).fileName() + QString(", %1 samples").arg(set.size());
    } else {
        const QDir dir(parser.value("images"));
        if (!dir.exists())
            throw UsageError("--images " + parser.value("images").toStdString() + ": not a folder");
        QStringList patterns;
        for (const QByteArray& format : QImageReader::supportedImageFormats())
            patterns << "*." + QString::fromLatin1(format);
        for (const QString& name : dir.entryList(patterns, QDir::Files, QDir::Name)) {
            s.files.push_back(dir.filePath(name));
            questions.push_back(parser.value("question"));
        }
        if (s.files.empty())
            throw UsageError("--images " + parser.value("images").toStdString() + ": no images in the folder");
        s.description = "images " + dir.dirName() + ", question '" + parser.value("question") + QString("', %1 samples").arg(s.files.size());
    }
    s.total = static_cast<int64_t>(s.files.size());
    s.sampleAt = [files = s.files, questions](int64_t k) {
        return std::pair<QImage, QString>{model::loadImage(files[static_cast<size_t>(k)]), questions[static_cast<size_t>(k)]};
    };
    return s;
}

// The common grid: --grid HxW, else the most common merged grid among the samples (ties: the first
// sample's), computed from the images' sizes alone; other grids are resampled to it.
std::pair<int, int> commonGrid(const QCommandLineParser& parser, const SampleSource& source, const model::Vlm& vlm, const QString& modelDir)
{
    if (parser.isSet("grid")) {
        const QStringList parts = parser.value("grid").split('x');
        bool okRows = false, okCols = false;
        const int rows = parts.size() == 2 ? parts[0].toInt(&okRows) : 0, cols = parts.size() == 2 ? parts[1].toInt(&okCols) : 0;
        if (!okRows || !okCols || rows < 1 || cols < 1 || rows > 256 || cols > 256)
            throw UsageError("--grid: expected HxW, each 1..256, got '" + parser.value("grid").toStdString() + "'");
        return {rows, cols};
    }
    const model::ModelConfig& cfg = vlm.config();
    const model::PreprocessOptions options = model::loadPreprocessOptions(modelDir, cfg);
    const int64_t factor = static_cast<int64_t>(cfg.vision.patchSize) * cfg.vision.mergeSize;
    auto gridOf = [&](QSize size) {
        const auto [h, w] = model::smartResize(size.height(), size.width(), factor, options.minPixels, options.maxPixels);
        return std::pair<int, int>{static_cast<int>(h / factor), static_cast<int>(w / factor)};
    };
    if (source.files.empty())
        return gridOf(source.sampleAt(0).first.size()); // the synthetic stream draws one picture size
    std::map<std::pair<int, int>, int> counts;
    std::pair<int, int> best{0, 0};
    for (const QString& file : source.files) {
        const QSize size = QImageReader(file).size();
        if (!size.isValid())
            throw Failure(file.toStdString() + ": not a readable image");
        const auto grid = gridOf(size);
        if (++counts[grid] > counts[best] || best.first == 0)
            best = grid;
    }
    return best;
}

std::vector<int64_t> shardIndices(const QCommandLineParser& parser, int64_t total)
{
    int shard = 0, shards = 1;
    if (parser.isSet("shard")) {
        const QStringList parts = parser.value("shard").split('/');
        bool ok1 = false, ok2 = false;
        shard = parts.size() == 2 ? parts[0].toInt(&ok1) : 0;
        shards = parts.size() == 2 ? parts[1].toInt(&ok2) : 0;
        if (!ok1 || !ok2 || shards < 1 || shard < 0 || shard >= shards)
            throw UsageError("--shard: expected i/n with 0 <= i < n (as batch --shard), got '" + parser.value("shard").toStdString() + "'");
    }
    std::vector<int64_t> indices;
    for (int64_t k = shard; k < total; k += shards) // sample k belongs to shard k mod n
        indices.push_back(k);
    if (indices.empty())
        throw UsageError("--shard " + parser.value("shard").toStdString() + ": no samples fall in this shard");
    return indices;
}

void writeOutputs(const QString& folder, const model::BiasAccumulation& a)
{
    try {
        writeBiasFiles(folder, a);
    } catch (const io::IoError& e) {
        throw Failure(e.what());
    }
}

int runMerge(const QCommandLineParser& parser)
{
    for (const char* flag : {"model", "samples", "questions", "images", "question", "scheme", "schemes", "shard", "grid", "capture-layers"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": --merge takes its settings from the shards");
    const QStringList folders = parser.positionalArguments();
    if (folders.size() < 2)
        throw UsageError("--merge: give two or more shard folders (each holding bias_state.json)");
    return runModelCommand([&] {
        std::optional<model::BiasAccumulation> merged;
        for (const QString& folder : folders) {
            const QString path = QDir(folder).filePath("bias_state.json");
            QByteArray bytes;
            try {
                bytes = io::readInputFile(path, int64_t(1) << 30, "bias state");
            } catch (const io::IoError& e) {
                throw Failure(e.what());
            }
            QJsonParseError error{};
            const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
            if (!doc.isObject())
                throw Failure(path.toStdString() + ": not JSON (" + error.errorString().toStdString() + ")");
            model::BiasAccumulation shard = model::BiasAccumulation::fromJson(doc.object(), path);
            if (!merged)
                merged = std::move(shard);
            else
                merged->merge(shard);
        }
        writeOutputs(parser.value("output"), *merged);
        std::fprintf(stderr, "bias: merged %lld of %lld samples from %lld shards\n", static_cast<long long>(merged->sampleCount()),
                     static_cast<long long>(merged->total), static_cast<long long>(folders.size()));
        return 0;
    });
}

} // namespace

void addBiasOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model", "Model folder.", "DIR"},
        {"samples", "Held-out synthetic samples of the bundled task.", "N"},
        {"seed", "With --samples: the stream (default 1000003).", "K"},
        {"rendering", "With --samples: grid (default), drawn or varied.", "R"},
        {"questions", "A question set (questions.jsonl, as eval --questions reads).", "FILE"},
        {"images", "A folder of images, each asked --question.", "DIR"},
        {"question", "The question asked of every image in --images.", "Q"},
        {"schemes", "Schemes besides the model's own, as attend --schemes: e.g. mrope,vrope,circle:alpha=0.3.", "LIST"},
        {"capture-layers", "Layers to measure: all (default) or e.g. 0,3.", "L"},
        {"grid", "Common grid HxW for the mean maps (default: the most common grid among the samples).", "HxW"},
        {"shard", "Measure only shard i of n (0-based: samples k with k mod n = i), for a job array; merge with --merge.", "i/n"},
    });
}

BiasSetup parseBiasOptions(const QCommandLineParser& parser)
{
    if (!parser.isSet("model"))
        throw UsageError("--model DIR is required");
    if (parser.isSet("scheme") || parser.isSet("age"))
        throw UsageError("--scheme/--age: give other schemes with --schemes; the model's own is always measured");
    refuseLayoutOnlyFlags(parser);
    BiasSetup setup;
    setup.source = sampleSource(parser);
    setup.indices = shardIndices(parser, setup.source.total);
    return setup;
}

model::BiasAccumulation measureBiasFromFlags(const QCommandLineParser& parser, const BiasSetup& setup, AttendModel& m,
                                             const std::function<void(int64_t, int64_t)>& progress, const std::function<bool()>& cancelled)
{
    const int layers = m.vlm->config().text.layers;
    model::BiasRequest request;
    const model::ModelScheme own = model::recordedScheme(m.dir);
    request.schemes.push_back(std::nullopt);
    request.labels << "own"; // measureBias names it
    for (const model::SchemeEntry& entry : parseSchemeEntries(parser.value("schemes").split(',', Qt::SkipEmptyParts), layers)) {
        if (model::sameScheme(entry.scheme, own, layers))
            continue; // the model's own, measured already
        request.schemes.push_back(entry.scheme);
        request.labels << entry.label;
    }
    request.layers = parseLayerList(parser.value("capture-layers"), layers);
    std::tie(request.rows, request.cols) = commonGrid(parser, setup.source, *m.vlm, m.dir);
    request.indices = setup.indices;
    request.sampleAt = setup.source.sampleAt;
    request.progress = progress;
    request.cancelled = cancelled;
    model::BiasAccumulation a = model::measureBias(*m.vlm, *m.tokenizer, m.dir, request);
    a.source = setup.source.description;
    a.total = setup.source.total;
    return a;
}

int runBias(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addBiasOptions(parser);
    parser.addOptions({
        {"merge", "Merge the shard folders given as arguments (each holding bias_state.json) into --output."},
        {"output", "Folder for bias.png/.svg/.pdf, bias.csv, bias.json and bias_state.json.", "DIR"},
    });
    parseOrThrow(parser, args, true);
    if (!parser.isSet("output"))
        throw UsageError("--output DIR is required");
    if (parser.isSet("merge"))
        return runMerge(parser);
    if (!parser.positionalArguments().isEmpty())
        throw UsageError("unexpected argument '" + parser.positionalArguments().first().toStdString() + "' (shard folders go with --merge)");
    const BiasSetup setup = parseBiasOptions(parser);
    return runModelCommand([&] {
        const std::unique_ptr<AttendModel> m = AttendModel::load(parser.value("model"), torch::kCPU, torch::kFloat32);
        writeOutputs(parser.value("output"), measureBiasFromFlags(parser, setup, *m, [](int64_t done, int64_t total) {
                         if (done % 25 == 0 || done == total)
                             std::fprintf(stderr, "bias: %lld/%lld samples\n", static_cast<long long>(done), static_cast<long long>(total));
                     }));
        return 0;
    });
}

} // namespace ropescope::cli

// `ropescope bias`: text -> image attention averaged over many samples, per scheme and layer (the seeds'
// bias measurements), with its shards merged by `bias --merge`.
#include "app/cli/attend_run.h"
#include "app/cli/attend_schemes.h"
#include "app/cli/bias_run.h"
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/sharded_command.h"
#include "core/cluster/shard_coverage.h"
#include "core/cluster/slurm.h"
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"
#include "core/model/analysis/bias_samples.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/vlm.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>

#include <cstdio>
#include <map>

namespace ropescope::cli {
namespace {

model::BiasSampleSource sampleSource(const QCommandLineParser& parser)
{
    const int given = parser.isSet("samples") + parser.isSet("questions") + parser.isSet("images") + parser.isSet("videos");
    if (given != 1)
        throw UsageError(
            "give one sample source: --samples N, --questions FILE.jsonl, --images DIR --question Q or --videos DIR --question Q");
    if (parser.isSet("question") != (parser.isSet("images") || parser.isSet("videos")))
        throw UsageError("--question Q goes with --images DIR or --videos DIR");
    for (const char* flag : {"seed", "rendering", "frames"})
        if (parser.isSet(flag) && !parser.isSet("samples"))
            throw UsageError(std::string("--") + flag + ": only with --samples (the synthetic stream)");
    if (parser.isSet("samples")) {
        const int n = parseInteger(parser, "samples");
        if (n < 1 || n > 1000000)
            throw UsageError("--samples: 1..1000000");
        const uint64_t seed = parser.isSet("seed") ? static_cast<uint64_t>(parseInteger(parser, "seed")) : 1000003;
        const auto rendering = model::renderingFromName(parser.isSet("rendering") ? parser.value("rendering") : "grid");
        if (!rendering)
            throw UsageError("--rendering: grid, drawn or varied, not '" + parser.value("rendering").toStdString() + "'");
        int frames = 0;
        if (parser.isSet("frames")) {
            frames = parseInteger(parser, "frames");
            if (frames < 1 || frames > model::kMaxVideoFrames)
                throw UsageError("--frames: 1.." + std::to_string(model::kMaxVideoFrames) + ", got " + std::to_string(frames));
        }
        return model::syntheticSamples(n, seed, *rendering, frames);
    }
    return runModelCommand([&] {
        if (parser.isSet("questions"))
            return model::questionSetSamples(parser.value("questions"));
        if (parser.isSet("images"))
            return model::imageFolderSamples(parser.value("images"), parser.value("question"));
        return model::videoFolderSamples(parser.value("videos"), parser.value("question"));
    });
}

// The common grid: --grid HxW, else the most common merged grid among the samples (model::commonShape's rule);
// other grids are resampled to it. Videos: the most common count of temporal patches likewise.
model::CommonShape commonShape(const QCommandLineParser& parser, const model::BiasSampleSource& source, const model::ModelBundle& m)
{
    model::CommonShape shape = model::commonShape(source, m.vlm->config(), m.preprocess);
    if (parser.isSet("grid")) {
        const QStringList parts = parser.value("grid").split('x');
        bool okRows = false, okCols = false;
        const int rows = parts.size() == 2 ? parts[0].toInt(&okRows) : 0, cols = parts.size() == 2 ? parts[1].toInt(&okCols) : 0;
        if (!okRows || !okCols || rows < 1 || cols < 1 || rows > 256 || cols > 256)
            throw UsageError("--grid: expected HxW, each 1..256, got '" + parser.value("grid").toStdString() + "'");
        shape.rows = rows;
        shape.cols = cols;
    }
    return shape;
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

void writeOutputs(const QString& folder, const model::BiasAccumulation& a, const QJsonObject& partial = {})
{
    try {
        reports::writeBiasFiles(folder, a, partial);
    } catch (const io::IoError& e) {
        throw Failure(e.what());
    }
}

// A shard folder's bias_state.json, read as `bias --merge` reads it (bounded, checked); throws UsageError.
model::BiasAccumulation readState(const QString& folder)
{
    return runModelCommand([&] { return model::readBiasState(folder); });
}

ShardedCommand shardedBias();

bool sameStream(const model::BiasAccumulation& a, const model::BiasSampleSource& source)
{
    return a.source == source.description && a.total == source.total;
}

int runMerge(const QCommandLineParser& parser)
{
    for (const char* flag : {"model", "samples", "frames", "questions", "images", "videos", "question", "scheme", "schemes", "shard",
                             "grid", "capture-layers", "keep-samples"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": --merge takes its settings from the shards");
    QStringList folders = parser.positionalArguments();
    const bool allowPartial = parser.isSet("allow-partial");
    int runShards = 0; // the split, when merging a --slurm run's shards
    // A --slurm run's own merge: its shards, all of them complete (with --allow-partial, those that are).
    if (folders.isEmpty() && cluster::isShardedRun(parser.value("output"))) {
        const ShardedCommand command = shardedBias();
        const cluster::ShardedRun run = runToMerge(parser.value("output"), command, "no whole bias_state.json in shards/<i>", allowPartial);
        runShards = run.shards;
        for (int i = 0; i < run.shards; ++i)
            if (command.complete(parser.value("output"), i, run.shards))
                folders << cluster::shardFolder(parser.value("output"), i);
    }
    if (folders.size() < 2 && !(folders.size() == 1 && cluster::isShardedRun(parser.value("output"))))
        throw UsageError("--merge: give two or more shard folders (each holding bias_state.json), or none when --output is a --slurm run");
    // Writing the merge into one of its shards would replace that shard's state with the sum of all of them.
    const QString output = QFileInfo(parser.value("output")).canonicalFilePath();
    for (const QString& folder : folders)
        if (!output.isEmpty() && QFileInfo(folder).canonicalFilePath() == output)
            throw UsageError("--output: " + parser.value("output").toStdString() +
                             " is one of the shards being merged; give a folder of its own");
    return runModelCommand([&] {
        std::optional<model::BiasAccumulation> merged;
        std::vector<std::vector<int64_t>> held; // each shard's samples, to name what a partial set lacks
        for (const QString& folder : folders) {
            model::BiasAccumulation shard = readState(folder);
            held.emplace_back();
            for (const model::BiasSampleStats& s : shard.cells.front().samples)
                held.back().push_back(s.sample);
            if (!merged)
                merged = std::move(shard);
            else
                merged->merge(shard);
        }
        // A merge of part of the stream is a figure of part of the data: refused, or on purpose and said so.
        const cluster::Coverage coverage = cluster::shardCoverage(held, merged->total, runShards);
        QJsonObject partial;
        if (!coverage.complete()) {
            if (!allowPartial)
                throw UsageError("--merge: " + coverage.describe().toStdString() +
                                 "; give every shard's folder, or --allow-partial to merge these on purpose (nothing was written)");
            partial = coverage.toJson();
            partial["note"] = coverage.describe();
        }
        writeOutputs(parser.value("output"), *merged, partial);
        std::fprintf(stderr, "bias: merged %lld of %lld samples from %lld shards%s\n", static_cast<long long>(merged->sampleCount()),
                     static_cast<long long>(merged->total), static_cast<long long>(folders.size()),
                     partial.isEmpty() ? "" : qPrintable("; PARTIAL (--allow-partial): " + coverage.describe()));
        return 0;
    });
}

// Checks a --slurm request before anything is submitted: the flags, the samples, the model's config and
// the schemes and layers against it. Returns the samples (at most one shard each).
int64_t validateBias(const QCommandLineParser& parser)
{
    const BiasSetup setup = parseBiasOptions(parser);
    const QString configPath = QDir(parser.value("model")).filePath("config.json");
    model::ModelConfig config;
    runModelCommand([&] {
        try {
            config = model::parseModelConfig(io::readInputFile(configPath, 16 << 20, "model config"), configPath);
        } catch (const io::IoError& e) {
            throw UsageError("--model: " + std::string(e.what()));
        }
    });
    parseSchemeEntries(parser.value("schemes").split(',', Qt::SkipEmptyParts), config.text.layers);
    parseLayerList(parser.value("capture-layers"), config.text.layers);
    return setup.source.total;
}

ShardedCommand shardedBias()
{
    ShardedCommand c;
    c.kind = "bias";
    c.shardTail = [](const QString& output, int shards) {
        return QStringList{"--shard", QString(cluster::kShardIndex) + "/" + QString::number(shards), "--output",
                           QDir(output).filePath(QString("shards/") + cluster::kShardIndex), "--skip-complete"};
    };
    c.mergeArgs = [](const QString& output) { return QStringList{"bias", "--merge", "--output", output}; };
    c.complete = [](const QString& output, int shard, int shards) {
        return model::folderHoldsShard(cluster::shardFolder(output, shard), shard, shards);
    };
    c.merged = [](const QString& output, int) {
        if (!QFileInfo(QDir(output).filePath("bias_state.json")).isFile())
            return false;
        try {
            const model::BiasAccumulation a = readState(output);
            return a.sampleCount() == a.total;
        } catch (const std::exception&) {
            return false;
        }
    };
    c.validate = validateBias;
    return c;
}

} // namespace

void addBiasOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model", "Model folder.", "DIR"},
        {"samples", "Held-out synthetic samples of the bundled task.", "N"},
        {"seed", "With --samples: the stream (default 1000003).", "K"},
        {"rendering", "With --samples: grid (default), drawn or varied.", "R"},
        {"frames", "With --samples: each sample a still video, its picture over F frames (the temporal bias alone).", "F"},
        {"questions", "A question set (questions.jsonl, as eval --questions reads).", "FILE"},
        {"images", "A folder of images, each asked --question.", "DIR"},
        {"videos", "A folder of videos, each a sub-folder of its frames (name order, taken at 2 frames per second), each asked --question.",
         "DIR"},
        {"question", "The question asked of every image in --images or video in --videos.", "Q"},
        {"keep-samples", "Also write every sample's map (bias_samples.csv); memory then grows with the samples."},
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

model::BiasAccumulation measureBiasFromFlags(const QCommandLineParser& parser, const BiasSetup& setup, ModelOnDevice& m,
                                             const std::function<void(int64_t, int64_t)>& progress, const std::function<bool()>& cancelled)
{
    const int layers = m.vlm->config().text.layers;
    model::BiasRequest request;
    const model::ModelScheme& own = m.own;
    request.schemes.push_back(std::nullopt);
    request.labels << "own"; // measureBias names it
    for (const model::SchemeEntry& entry : parseSchemeEntries(parser.value("schemes").split(',', Qt::SkipEmptyParts), layers)) {
        if (model::sameScheme(entry.scheme, own, layers))
            continue; // the model's own, measured already
        request.schemes.push_back(entry.scheme);
        request.labels << entry.label;
    }
    request.layers = parseLayerList(parser.value("capture-layers"), layers);
    model::useSamples(request, setup.source, commonShape(parser, setup.source, m));
    request.indices = setup.indices;
    request.keepSamples = parser.isSet("keep-samples");
    request.progress = progress;
    request.cancelled = cancelled;
    model::BiasAccumulation a = model::measureBias(m, request);
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
        {"allow-partial",
         "With --merge: merge a set that lacks shards on purpose (refused otherwise); bias.json's \"partial_merge\" and the "
         "figure's title then say what is missing."},
        {"output", "Folder for bias.png/.svg/.pdf, bias.csv, bias.json and bias_state.json.", "DIR"},
    });
    addShardedOptions(parser, "measurement");
    parseOrThrow(parser, args, true);
    if (wantsSharding(parser)) {
        if (!parser.positionalArguments().isEmpty())
            throw UsageError("unexpected argument '" + parser.positionalArguments().first().toStdString() + "'");
        for (const char* flag : {"merge", "allow-partial"})
            if (parser.isSet(flag))
                throw UsageError(std::string("--") + flag + ": not with --slurm, --resume or --status (the run's merge job does it)");
        return runSharded(parser, args, shardedBias());
    }
    if (!parser.isSet("output"))
        throw UsageError("--output DIR is required");
    if (parser.isSet("skip-complete") && !parser.isSet("shard"))
        throw UsageError("--skip-complete: only with --shard i/n");
    if (parser.isSet("allow-partial") && !parser.isSet("merge"))
        throw UsageError("--allow-partial: only with --merge");
    if (parser.isSet("merge"))
        return runMerge(parser);
    if (!parser.positionalArguments().isEmpty())
        throw UsageError("unexpected argument '" + parser.positionalArguments().first().toStdString() +
                         "' (shard folders go with --merge)");
    const BiasSetup setup = parseBiasOptions(parser);
    if (parser.isSet("skip-complete")) {
        const QStringList parts = parser.value("shard").split('/');
        const QString folder = parser.value("output");
        const auto done = model::completeShardState(folder, parts[0].toInt(), parts[1].toInt());
        if (done && sameStream(*done, setup.source)) {
            std::fprintf(stderr, "bias: shard %s is complete in %s already; skipped\n", qPrintable(parser.value("shard")),
                         qPrintable(folder));
            return 0;
        }
    }
    return runModelCommand([&] {
        const std::unique_ptr<ModelOnDevice> m = ModelOnDevice::load(parser.value("model"), c10::kCPU, c10::kFloat);
        writeOutputs(parser.value("output"), measureBiasFromFlags(parser, setup, *m, [](int64_t done, int64_t total) {
                         if (done % 25 == 0 || done == total)
                             std::fprintf(stderr, "bias: %lld/%lld samples\n", static_cast<long long>(done), static_cast<long long>(total));
                     }));
        return 0;
    });
}

} // namespace ropescope::cli

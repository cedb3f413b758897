#include "app/cli/eval_shards.h"

#include "app/cli/cli_error.h"
#include "app/cli/output.h"
#include "core/cluster/shard_coverage.h"
#include "core/cluster/slurm.h"
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"
#include "core/model/engine/model_config.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>
#include <cstdio>
#include <optional>

namespace ropescope::cli {
namespace {

constexpr int kStateFormat = 1;
constexpr int kMaxLayers = 1024;
constexpr int64_t kMaxSamples = 1000000;

[[noreturn]] void bad(const QString& path, const std::string& what)
{
    throw UsageError(path.toStdString() + ": " + what);
}

std::vector<double> numbers(const QJsonValue& v, size_t expected, const QString& path, const char* what)
{
    if (!v.isArray() || static_cast<size_t>(v.toArray().size()) != expected)
        bad(path, std::string("a sample's '") + what + "' must list " + std::to_string(expected) + " numbers");
    std::vector<double> out;
    out.reserve(expected);
    for (const QJsonValue& x : v.toArray()) {
        if (!x.isDouble() || !std::isfinite(x.toDouble()))
            bad(path, std::string("a sample's '") + what + "' holds something other than a finite number");
        out.push_back(x.toDouble());
    }
    return out;
}

QString stateOf(const QString& output)
{
    return QDir(output).filePath("eval_state.json");
}

} // namespace

QJsonObject evalStateJson(const model::EvalResult& r, const EvalSource& source)
{
    QJsonArray samples;
    for (const model::EvalSample& s : r.perSample) {
        QJsonObject o{{"index", static_cast<double>(s.index)}, {"type", s.type}, {"right", s.right}};
        if (!s.grounding.empty()) {
            QJsonArray g;
            for (double x : s.grounding)
                g.append(x);
            o["grounding"] = g;
        }
        if (r.swapped) {
            QJsonArray d;
            for (double x : s.shift)
                d.append(x);
            o["shift"] = d;
        }
        samples.append(o);
    }
    return QJsonObject{
        {"format", kStateFormat}, {"scheme", r.scheme},    {"rendering", model::renderingName(r.rendering)}, {"layers", r.layers},
        {"swapped", r.swapped},   {"source", source.json}, {"total", static_cast<double>(source.total)},     {"samples", samples}};
}

model::EvalResult readEvalState(const QString& path, EvalSource* source)
{
    QJsonObject json;
    try {
        json = io::readJsonObjectFile(path, int64_t(1) << 30, "eval state");
    } catch (const io::IoError& e) {
        throw UsageError(e.what());
    }
    if (json.value("format").toInt() != kStateFormat)
        bad(path, "not an eval state of this RopeScope (format " + std::to_string(kStateFormat) + ")");
    model::EvalResult r;
    r.scheme = json.value("scheme").toString();
    const auto rendering = model::renderingFromName(json.value("rendering").toString());
    if (!rendering)
        bad(path, "unknown 'rendering'");
    r.rendering = *rendering;
    r.layers = json.value("layers").toInt(-1);
    if (r.layers < 1 || r.layers > kMaxLayers)
        bad(path, "'layers' must be 1.." + std::to_string(kMaxLayers));
    if (!json.value("swapped").isBool())
        bad(path, "'swapped' must be true or false");
    r.swapped = json.value("swapped").toBool();
    if (!json.value("source").isObject())
        bad(path, "'source' must be an object");
    const double total = json.value("total").toDouble(-1);
    if (total < 1 || total > kMaxSamples || total != std::floor(total))
        bad(path, "'total' must be a whole number 1.." + std::to_string(kMaxSamples));
    const QJsonArray samples = json.value("samples").toArray();
    if (!json.value("samples").isArray() || static_cast<double>(samples.size()) > total)
        bad(path, "'samples' must be a list of at most 'total' samples");
    std::vector<model::EvalSample> list;
    list.reserve(static_cast<size_t>(samples.size()));
    for (const QJsonValue& v : samples) {
        const QJsonObject o = v.toObject();
        model::EvalSample s;
        const double index = o.value("index").toDouble(-1);
        if (index < 0 || index >= total || index != std::floor(index))
            bad(path, "a sample's 'index' is not a whole number below 'total'");
        s.index = static_cast<int64_t>(index);
        if (!o.value("type").isString() || o.value("type").toString().size() > 200 || !o.value("right").isBool())
            bad(path, "a sample's 'type' or 'right' is missing");
        s.type = o.value("type").toString();
        s.right = o.value("right").toBool();
        if (o.contains("grounding"))
            s.grounding = numbers(o.value("grounding"), static_cast<size_t>(r.layers), path, "grounding");
        if (r.swapped)
            s.shift = numbers(o.value("shift"), static_cast<size_t>(r.layers), path, "shift");
        list.push_back(std::move(s));
    }
    if (source) {
        source->json = json.value("source").toObject();
        source->total = static_cast<int64_t>(total);
    }
    try {
        return model::reduceEval(r, std::move(list));
    } catch (const model::ModelError& e) {
        bad(path, e.what());
    }
}

QJsonObject evalReportJson(const model::EvalResult& r, const EvalSource& source)
{
    QJsonObject types;
    for (const auto& [type, counts] : r.byType)
        types[type] = QJsonObject{
            {"accuracy", static_cast<double>(counts.first) / counts.second}, {"correct", counts.first}, {"total", counts.second}};
    QJsonArray grounding;
    for (double g : r.grounding)
        grounding.append(g);
    QJsonObject json{{"model", source.json.value("model")},
                     {"scheme", r.scheme},
                     {"samples", r.samples},
                     {"accuracy", r.accuracy()},
                     {"by_type", types},
                     {"grounding", grounding}};
    if (source.json.contains("questions")) {
        json["questions"] = source.json.value("questions");
    } else {
        json["seed"] = source.json.value("seed");
        json["rendering"] = model::renderingName(r.rendering);
    }
    if (!r.shift.empty()) {
        QJsonArray shift;
        for (double d : r.shift)
            shift.append(d);
        json["shift_from_trained_scheme"] = shift;
    }
    return json;
}

QByteArray evalReportText(const model::EvalResult& r, const EvalSource& source)
{
    const QByteArray from = source.json.contains("questions")
        ? "questions " + source.json.value("questions").toString().toUtf8()
        : "held-out samples, rendering " + QByteArray(model::renderingName(r.rendering));
    QByteArray text = "model " + source.json.value("model").toString().toUtf8() + ", scheme " + r.scheme.toUtf8() + ", " +
        QByteArray::number(r.samples) + " " + from + "\n";
    for (const auto& [type, counts] : r.byType) {
        const double acc = static_cast<double>(counts.first) / counts.second;
        text += "  " + type.toUtf8().leftJustified(10) + QByteArray::number(100 * acc, 'f', 1) + "%  (" + QByteArray::number(counts.first) +
            "/" + QByteArray::number(counts.second) + ")\n";
    }
    text += "  overall   " + QByteArray::number(100 * r.accuracy(), 'f', 1) + "%\n";
    if (!r.grounding.empty()) {
        text += "  grounding per layer (1.0 = chance):";
        for (double g : r.grounding)
            text += " " + QByteArray::number(g, 'f', 2);
        text += "\n";
    }
    if (!r.shift.empty()) {
        text += "  attention shift from the trained scheme per layer (total variation, 0 = same places):";
        for (double d : r.shift)
            text += " " + QByteArray::number(d, 'f', 3);
        text += "\n";
    }
    return text;
}

bool evalStateHoldsShard(const QString& path, int shard, int shards, const EvalSource* expected)
{
    if (!QFileInfo(path).isFile())
        return false;
    try {
        EvalSource source;
        const model::EvalResult r = readEvalState(path, &source);
        if (expected && (source.json != expected->json || source.total != expected->total))
            return false;
        const int64_t count = source.total > shard ? (source.total - shard + shards - 1) / shards : 0;
        if (static_cast<int64_t>(r.perSample.size()) != count)
            return false;
        for (const model::EvalSample& s : r.perSample)
            if (s.index % shards != shard)
                return false;
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

int mergeEval(const QCommandLineParser& parser)
{
    QStringList states = parser.positionalArguments();
    const QString output = parser.value("output");
    const bool ofRun = states.isEmpty() && cluster::isShardedRun(output);
    const bool allowPartial = parser.isSet("allow-partial");
    int runShards = 0; // the split, when merging a --slurm run's shards
    if (ofRun) {
        const ShardedCommand command = shardedEval();
        const cluster::ShardedRun run = runToMerge(output, command, "no whole eval_state.json in shards/<i>", allowPartial);
        runShards = run.shards;
        for (int i = 0; i < run.shards; ++i)
            if (command.complete(output, i, run.shards)) // all of them, unless --allow-partial
                states << QDir(cluster::shardFolder(output, i)).filePath("eval_state.json");
    } else if (states.size() < 2) {
        throw UsageError("--merge: give two or more state files (eval --shard i/n --state FILE), or none when --output is a --slurm run");
    }
    std::optional<EvalSource> source;
    model::EvalResult settings;
    std::vector<model::EvalSample> samples;
    std::vector<std::vector<int64_t>> held; // each state's samples, to name what a partial set lacks
    for (const QString& path : states) {
        EvalSource s;
        model::EvalResult r = readEvalState(path, &s);
        held.emplace_back();
        for (const model::EvalSample& sample : r.perSample)
            held.back().push_back(sample.index);
        if (!source) {
            source = s;
            settings = r;
        } else if (s.json != source->json || s.total != source->total || r.scheme != settings.scheme || r.layers != settings.layers ||
                   r.swapped != settings.swapped || r.rendering != settings.rendering) {
            throw UsageError(path.toStdString() + ": another evaluation than " + states.first().toStdString() +
                             " (model, samples or scheme differ)");
        }
        samples.insert(samples.end(), std::make_move_iterator(r.perSample.begin()), std::make_move_iterator(r.perSample.end()));
    }
    model::EvalResult merged;
    try {
        merged = model::reduceEval(settings, std::move(samples));
    } catch (const model::ModelError& e) {
        throw UsageError(std::string("--merge: ") + e.what());
    }
    // A report on part of the samples is refused, or made on purpose and says so.
    const cluster::Coverage coverage = cluster::shardCoverage(held, source->total, runShards);
    QByteArray partialLine;
    QJsonObject partial;
    if (!coverage.complete()) {
        if (!allowPartial)
            throw UsageError("--merge: " + coverage.describe().toStdString() +
                             "; give every shard's state, or --allow-partial to merge these on purpose (nothing was written)");
        partial = coverage.toJson();
        partial["note"] = coverage.describe();
        partialLine = "  PARTIAL MERGE (--allow-partial): " + coverage.describe().toUtf8() + "\n";
    }
    QJsonObject reportJson = evalReportJson(merged, *source);
    if (!partial.isEmpty())
        reportJson["partial_merge"] = partial;
    const QByteArray reportText = evalReportText(merged, *source) + partialLine;
    if (ofRun) {
        io::StagedFiles staged(output); // all three or none
        try {
            staged.stage("eval.txt", reportText);
            staged.stage("eval.json", QJsonDocument(reportJson).toJson());
            staged.stage("eval_state.json", QJsonDocument(evalStateJson(merged, *source)).toJson(QJsonDocument::Compact));
            staged.commit();
        } catch (const io::IoError& e) {
            throw Failure(e.what());
        }
    } else {
        writeOutput(output, parser.isSet("json") ? QJsonDocument(reportJson).toJson() : reportText);
    }
    std::fprintf(stderr, "eval: merged %d of %lld samples from %lld shards%s\n", merged.samples, static_cast<long long>(source->total),
                 static_cast<long long>(states.size()),
                 partial.isEmpty() ? "" : qPrintable("; PARTIAL (--allow-partial): " + coverage.describe()));
    return 0;
}

ShardedCommand shardedEval()
{
    ShardedCommand c;
    c.kind = "eval";
    c.shardTail = [](const QString& output, int shards) {
        return QStringList{"--shard", QString(cluster::kShardIndex) + "/" + QString::number(shards), "--state",
                           QDir(output).filePath(QString("shards/") + cluster::kShardIndex + "/eval_state.json"), "--skip-complete"};
    };
    c.mergeArgs = [](const QString& output) { return QStringList{"eval", "--merge", "--output", output}; };
    c.complete = [](const QString& output, int shard, int shards) {
        return evalStateHoldsShard(QDir(cluster::shardFolder(output, shard)).filePath("eval_state.json"), shard, shards);
    };
    c.merged = [](const QString& output, int) {
        if (!QFileInfo(stateOf(output)).isFile() || !QFileInfo(QDir(output).filePath("eval.txt")).isFile())
            return false;
        try {
            EvalSource source;
            return static_cast<int64_t>(readEvalState(stateOf(output), &source).perSample.size()) == source.total;
        } catch (const std::exception&) {
            return false;
        }
    };
    return c; // validate: command_eval.cpp, which knows the flags
}

} // namespace ropescope::cli

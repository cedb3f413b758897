// `ropescope eval`: accuracy per question type and grounding per layer of a bundled-task model.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/eval_shards.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/atomic_file.h"
#include "core/model/analysis/evaluator.h"
#include "core/model/engine/model_config.h"
#include "core/model/training/synthetic_task.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>

namespace ropescope::cli {

namespace {

// The first 20 held-out samples (PNG + questions.jsonl), written only after the evaluation succeeded and
// all together (io::StagedFiles): a model that fails, or one target that is a link, a FIFO or a folder,
// leaves nothing behind, and nothing is written through a link.
void saveSamples(const QString& folder, uint64_t seed, model::Rendering rendering)
{
    constexpr int kSavedSamples = 20;
    std::vector<std::pair<QString, QByteArray>> files;
    QByteArray lines;
    for (int i = 0; i < kSavedSamples; ++i) {
        const model::SyntheticSample s = model::SyntheticTask::sample(seed, static_cast<uint64_t>(i), rendering);
        const QString name = QString("sample_%1.png").arg(i, 2, 10, QChar('0'));
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        if (!s.image.save(&buffer, "PNG"))
            throw Failure("--save-samples: could not encode " + name.toStdString());
        files.emplace_back(name, png);
        QJsonArray mask;
        for (bool m : s.mask)
            mask.append(m ? 1 : 0);
        lines +=
            QJsonDocument(QJsonObject{{"image", name}, {"question", s.question}, {"answer", s.answer}, {"type", s.type}, {"mask", mask}})
                .toJson(QJsonDocument::Compact) +
            "\n";
    }
    files.emplace_back("questions.jsonl", lines);
    if (!QDir().mkpath(folder))
        throw Failure("--save-samples " + folder.toStdString() + ": cannot create the folder");
    io::StagedFiles staged(folder);
    for (const auto& [name, bytes] : files)
        staged.stage(name, bytes);
    staged.commit();
}

// What the flags ask to evaluate, checked without the model.
struct EvalRequest {
    int samples = 200;
    uint64_t seed = 1000003;
    model::Rendering rendering = model::Rendering::OnGrid;
    bool ownQuestions = false;
    model::EvalShard shard;
    EvalSource source;
};

EvalRequest parseEvalRequest(const QCommandLineParser& parser)
{
    if (!parser.isSet("model"))
        throw UsageError("--model DIR is required");
    EvalRequest q;
    q.samples = parser.isSet("samples") ? parseInteger(parser, "samples") : 200;
    if (q.samples < 1 || q.samples > 100000)
        throw UsageError("--samples: 1..100000");
    q.seed = parser.isSet("seed") ? static_cast<uint64_t>(parseInteger(parser, "seed")) : 1000003;
    const auto rendering = model::renderingFromName(parser.value("rendering").isEmpty() ? "grid" : parser.value("rendering"));
    if (!rendering)
        throw UsageError("--rendering: grid, drawn or varied, not '" + parser.value("rendering").toStdString() + "'");
    q.rendering = *rendering;
    q.ownQuestions = parser.isSet("questions");
    for (const char* flag : {"samples", "seed", "rendering", "save-samples"})
        if (q.ownQuestions && parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": not with --questions (it draws synthetic samples)");
    if (parser.isSet("shard")) {
        static const QRegularExpression re("^(\\d{1,6})/(\\d{1,6})$");
        const auto m = re.match(parser.value("shard"));
        q.shard = {m.captured(1).toInt(), m.captured(2).toInt()};
        if (!m.hasMatch() || q.shard.count < 1 || q.shard.index >= q.shard.count)
            throw UsageError("--shard: expected i/n with 0 <= i < n, got '" + parser.value("shard").toStdString() + "'");
        if (!parser.isSet("state"))
            throw UsageError("--shard: give --state FILE too, the shard's samples that eval --merge reads");
    }
    for (const char* flag : {"save-samples"})
        if (parser.isSet(flag) && (parser.isSet("shard") || parser.isSet("slurm")))
            throw UsageError(std::string("--") + flag + ": not with --shard or --slurm (run it once, unsharded)");
    refuseLayoutOnlyFlags(parser);
    q.source.json = QJsonObject{{"model", parser.value("model")}};
    if (q.ownQuestions) {
        q.source.json["questions"] = parser.value("questions");
        q.source.total = runModelCommand([&] { return static_cast<int64_t>(model::readQuestionSet(parser.value("questions")).size()); });
    } else {
        q.source.json["seed"] = static_cast<double>(q.seed);
        q.source.json["rendering"] = model::renderingName(q.rendering);
        q.source.total = q.samples;
    }
    return q;
}

int64_t validateEval(const QCommandLineParser& parser)
{
    if (parser.isSet("output") && parser.isSet("json"))
        throw UsageError("--json: not with --slurm (the merge writes eval.txt and eval.json into --output)");
    const EvalRequest q = parseEvalRequest(parser);
    const QString config = QDir(parser.value("model")).filePath("config.json");
    runModelCommand([&] {
        const int layers = model::loadModelConfig(config).text.layers;
        if (parser.isSet("scheme") || parser.isSet("age") || parser.isSet("layers"))
            modelSchemeFrom(parser, layers);
    });
    return q.source.total;
}

} // namespace

int runEval(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    parser.addOptions({
        {"model", "Model folder.", "DIR"},
        {"samples", "Held-out samples (default 200).", "N"},
        {"seed", "Held-out stream (default 1000003; training uses small seeds).", "K"},
        {"rendering",
         "How the test pictures are drawn: grid (the training generator's own, default) or drawn (the second test set: "
         "antialiased, off the grid, other shades and gradients) or varied (training's augmentation).",
         "R"},
        {"questions",
         "Your own labelled questions instead of the synthetic stream: a questions.jsonl (one {\"image\", \"question\", "
         "\"answer\"[, \"type\", \"mask\"]} per line, images relative to it), e.g. what --save-samples writes.",
         "FILE"},
        {"json", "Print JSON."},
        {"save-samples", "Also write the first 20 held-out samples (PNG + questions.jsonl with answers and masks) here.", "DIR"},
        {"output", "Write to this file instead of standard output (with --slurm: the run's folder).", "F"},
        {"shard", "Evaluate only shard i of n (0-based: samples k with k mod n = i), for a job array; needs --state.", "i/n"},
        {"state", "Also write every sample's outcome here (eval_state.json), which --merge reads.", "FILE"},
        {"merge",
         "Merge the state files given as arguments into one report (--output, --json), or a --slurm run's shards when "
         "--output is its folder."},
        {"allow-partial",
         "With --merge: merge a set that lacks shards on purpose (refused otherwise); the report then says what is missing "
         "(\"partial_merge\" in its JSON)."},
    });
    addShardedOptions(parser, "evaluation");
    parseOrThrow(parser, args, true);
    if (parser.isSet("allow-partial") && (!parser.isSet("merge") || wantsSharding(parser)))
        throw UsageError("--allow-partial: only with --merge");
    if (wantsSharding(parser)) {
        ShardedCommand command = shardedEval();
        command.validate = validateEval;
        return runSharded(parser, args, command);
    }
    if (parser.isSet("merge")) {
        for (const char* flag : {"model", "samples", "seed", "rendering", "questions", "save-samples", "shard", "state", "scheme", "age"})
            if (parser.isSet(flag))
                throw UsageError(std::string("--") + flag + ": --merge takes its settings from the states");
        return mergeEval(parser);
    }
    if (!parser.positionalArguments().isEmpty())
        throw UsageError("unexpected argument '" + parser.positionalArguments().first().toStdString() + "' (state files go with --merge)");
    if (parser.isSet("skip-complete") && !parser.isSet("shard"))
        throw UsageError("--skip-complete: only with --shard i/n");
    const EvalRequest q = parseEvalRequest(parser);
    if (parser.isSet("skip-complete") && evalStateHoldsShard(parser.value("state"), q.shard.index, q.shard.count, &q.source)) {
        std::fprintf(stderr, "eval: shard %s is complete in %s already; skipped\n", qPrintable(parser.value("shard")),
                     qPrintable(parser.value("state")));
        return 0;
    }
    return runModelCommand([&] {
        std::optional<model::ModelScheme> scheme;
        if (parser.isSet("scheme") || parser.isSet("age") || parser.isSet("layers")) {
            const int layers = model::loadModelConfig(QDir(parser.value("model")).filePath("config.json")).text.layers;
            scheme = modelSchemeFrom(parser, layers);
        }
        const model::EvalResult r = q.ownQuestions
            ? model::evaluateQuestions(
                  parser.value("model"), model::readQuestionSet(parser.value("questions")), scheme,
                  [](int done, int total) {
                      if (done % 50 == 0 || done == total)
                          std::fprintf(stderr, "%d/%d questions\n", done, total);
                  },
                  q.shard)
            : model::evaluate(parser.value("model"), q.samples, q.seed, scheme, q.rendering, q.shard);
        if (parser.isSet("save-samples"))
            saveSamples(parser.value("save-samples"), q.seed, q.rendering);
        if (parser.isSet("state")) {
            const QString state = parser.value("state");
            if (!QDir().mkpath(QFileInfo(state).absolutePath()))
                throw Failure("--state " + state.toStdString() + ": cannot create its folder");
            writeOutput(state, QJsonDocument(evalStateJson(r, q.source)).toJson(QJsonDocument::Compact));
        }
        writeOutput(parser.value("output"),
                    parser.isSet("json") ? QJsonDocument(evalReportJson(r, q.source)).toJson() : evalReportText(r, q.source));
        return 0;
    });
}

} // namespace ropescope::cli

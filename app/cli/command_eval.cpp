// `ropescope eval`: accuracy per question type and grounding per layer of a bundled-task model.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/atomic_file.h"
#include "core/model/analysis/evaluator.h"
#include "core/model/engine/model_config.h"
#include "core/model/training/synthetic_task.h"

#include <QBuffer>
#include <QDir>
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
        lines += QJsonDocument(QJsonObject{{"image", name}, {"question", s.question}, {"answer", s.answer}, {"type", s.type}, {"mask", mask}})
                     .toJson(QJsonDocument::Compact)
                 + "\n";
    }
    files.emplace_back("questions.jsonl", lines);
    if (!QDir().mkpath(folder))
        throw Failure("--save-samples " + folder.toStdString() + ": cannot create the folder");
    io::StagedFiles staged(folder);
    for (const auto& [name, bytes] : files)
        staged.stage(name, bytes);
    staged.commit();
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
        {"rendering", "How the test pictures are drawn: grid (the training generator's own, default) or drawn (the second test set: "
                      "antialiased, off the grid, other shades and gradients) or varied (training's augmentation).", "R"},
        {"questions", "Your own labelled questions instead of the synthetic stream: a questions.jsonl (one {\"image\", \"question\", "
                      "\"answer\"[, \"type\", \"mask\"]} per line, images relative to it), e.g. what --save-samples writes.", "FILE"},
        {"json", "Print JSON."},
        {"save-samples", "Also write the first 20 held-out samples (PNG + questions.jsonl with answers and masks) here.", "DIR"},
        {"output", "Write to this file instead of standard output.", "F"},
    });
    parseOrThrow(parser, args);
    if (!parser.isSet("model"))
        throw UsageError("--model DIR is required");
    const int samples = parser.isSet("samples") ? parseInteger(parser, "samples") : 200;
    if (samples < 1 || samples > 100000)
        throw UsageError("--samples: 1..100000");
    const uint64_t seed = parser.isSet("seed") ? static_cast<uint64_t>(parseInteger(parser, "seed")) : 1000003;
    const auto rendering = model::renderingFromName(parser.value("rendering").isEmpty() ? "grid" : parser.value("rendering"));
    if (!rendering)
        throw UsageError("--rendering: grid, drawn or varied, not '" + parser.value("rendering").toStdString() + "'");
    const bool ownQuestions = parser.isSet("questions");
    for (const char* flag : {"samples", "seed", "rendering", "save-samples"})
        if (ownQuestions && parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": not with --questions (it draws synthetic samples)");
    refuseLayoutOnlyFlags(parser);
    return runModelCommand([&] {
        std::optional<model::ModelScheme> scheme;
        if (parser.isSet("scheme") || parser.isSet("age") || parser.isSet("layers")) {
            const int layers = model::loadModelConfig(QDir(parser.value("model")).filePath("config.json")).text.layers;
            scheme = modelSchemeFrom(parser, layers);
        }
        const model::EvalResult r =
            ownQuestions ? model::evaluateQuestions(parser.value("model"), model::readQuestionSet(parser.value("questions")), scheme,
                                                    [](int done, int total) {
                                                        if (done % 50 == 0 || done == total)
                                                            std::fprintf(stderr, "%d/%d questions\n", done, total);
                                                    })
                         : model::evaluate(parser.value("model"), samples, seed, scheme, *rendering);
        if (parser.isSet("save-samples"))
            saveSamples(parser.value("save-samples"), seed, *rendering);
        const QByteArray source = ownQuestions ? "questions " + parser.value("questions").toUtf8()
                                               : "held-out samples, rendering " + QByteArray(model::renderingName(r.rendering));
        QJsonObject types;
        QByteArray text = "model " + parser.value("model").toUtf8() + ", scheme " + r.scheme.toUtf8() + ", " + QByteArray::number(r.samples) + " "
                          + source + "\n";
        for (const auto& [type, counts] : r.byType) {
            const double acc = static_cast<double>(counts.first) / counts.second;
            types[type] = QJsonObject{{"accuracy", acc}, {"correct", counts.first}, {"total", counts.second}};
            text += "  " + type.toUtf8().leftJustified(10) + QByteArray::number(100 * acc, 'f', 1) + "%  (" + QByteArray::number(counts.first) + "/"
                    + QByteArray::number(counts.second) + ")\n";
        }
        text += "  overall   " + QByteArray::number(100 * r.accuracy(), 'f', 1) + "%\n";
        QJsonArray grounding;
        if (!r.grounding.empty()) {
            text += "  grounding per layer (1.0 = chance):";
            for (double g : r.grounding) {
                grounding.append(g);
                text += " " + QByteArray::number(g, 'f', 2);
            }
            text += "\n";
        }
        QJsonObject json{{"model", parser.value("model")}, {"scheme", r.scheme}, {"samples", r.samples}, {"accuracy", r.accuracy()},
                         {"by_type", types}, {"grounding", grounding}};
        if (ownQuestions) {
            json["questions"] = parser.value("questions");
        } else {
            json["seed"] = static_cast<double>(seed);
            json["rendering"] = model::renderingName(r.rendering);
        }
        if (!r.shift.empty()) {
            text += "  attention shift from the trained scheme per layer (total variation, 0 = same places):";
            QJsonArray shift;
            for (double d : r.shift) {
                shift.append(d);
                text += " " + QByteArray::number(d, 'f', 3);
            }
            text += "\n";
            json["shift_from_trained_scheme"] = shift;
        }
        writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(json).toJson() : text);
        return 0;
    });
}

} // namespace ropescope::cli

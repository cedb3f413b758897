// `ropescope train` and `ropescope eval`: the bundled models' synthetic grounding task.
#include "cli_error.h"
#include "commands.h"
#include "geometry/errors.h"
#include "geometry_options.h"
#include "model/evaluator.h"
#include "model/synthetic_task.h"
#include "model/trainer.h"
#include "model_options.h"

#include <QDir>
#include "output.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>

namespace ropescope::cli {

namespace {

model::ModelScheme schemeFrom(const QCommandLineParser& parser, geometry::SchemeKind fallback)
{
    model::ModelScheme m;
    const SchemeRequest req = parseSchemeOptions(parser, fallback, 4);
    m.params = req.params;
    if (parser.isSet("age"))
        m.age = parser.value("age").toStdString();
    return m;
}

} // namespace

int runTrain(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    parser.addOptions({
        {"steps", "Optimiser steps (default 2000).", "N"},
        {"batch", "Samples per step (default 32).", "N"},
        {"lr", "Peak learning rate (default 2e-3 from scratch, 1e-3 fine-tuning).", "X"},
        {"seed", "Training stream and initialisation seed (default 1).", "K"},
        {"from", "Base model to fine-tune: the decoder trains, the vision tower and merger stay frozen.", "DIR"},
        {"from-scratch", "Train every weight from random initialisation (the default without --from)."},
        {"train-vision", "With --from: train the vision tower and merger too (to continue training a base model)."},
        {"harope", "Add HARoPE head maps to every layer (starting at M = I, plain RoPE) and train them with the decoder."},
        {"vision-steps", "Train the vision tower for the first N steps only, then freeze it (faster steps once it has converged).", "N"},
        {"save-every", "Also write the model folder every N steps, to evaluate a long run while it trains.", "N"},
        {"device", "cpu (default) or cuda.", "D"},
        {"output", "Model folder to write.", "DIR"},
    });
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output DIR is required");
    if (parser.isSet("from") && parser.isSet("from-scratch"))
        throw UsageError("--from and --from-scratch exclude each other");
    model::TrainOptions o;
    o.scheme = schemeFrom(parser, geometry::SchemeKind::Mrope);
    o.output = parser.value("output");
    o.from = parser.value("from");
    o.trainVision = parser.isSet("train-vision");
    o.harope = parser.isSet("harope");
    if (o.trainVision && o.from.isEmpty())
        throw UsageError("--train-vision continues a model given with --from");
    if (parser.isSet("steps"))
        o.steps = parseInteger(parser, "steps");
    if (parser.isSet("batch"))
        o.batch = parseInteger(parser, "batch");
    if (parser.isSet("vision-steps"))
        o.visionSteps = parseInteger(parser, "vision-steps");
    if (parser.isSet("save-every"))
        o.saveEvery = parseInteger(parser, "save-every");
    if (parser.isSet("lr"))
        o.lr = parseNumber(parser, "lr");
    if (parser.isSet("seed"))
        o.seed = static_cast<uint64_t>(parseInteger(parser, "seed"));
    if (o.steps < 1 || o.steps > 1000000 || o.batch < 1 || o.batch > 4096 || o.lr < 0)
        throw UsageError("--steps 1..1e6, --batch 1..4096, --lr >= 0");
    o.device = parseDevice(parser);
    o.progress = [](const QString& line) {
        std::printf("%s\n", qPrintable(line));
        std::fflush(stdout);
    };
    return runModelCommand([&] {
        const model::TrainResult r = model::train(o);
        std::printf("trained %lld parameters (%lld trainable) in %.0f s; last-100-step accuracy %.1f%%; wrote %s\n",
                    static_cast<long long>(r.parameters), static_cast<long long>(r.trainable), r.seconds, 100 * r.finalAccuracy,
                    qPrintable(o.output));
        return 0;
    });
}

int runEval(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    parser.addOptions({
        {"model", "Model folder.", "DIR"},
        {"samples", "Held-out samples (default 200).", "N"},
        {"seed", "Held-out stream (default 1000003; training uses small seeds).", "K"},
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
    std::optional<model::ModelScheme> scheme;
    if (parser.isSet("scheme"))
        scheme = schemeFrom(parser, geometry::SchemeKind::Mrope);
    return runModelCommand([&] {
        if (parser.isSet("save-samples")) {
            const QDir dir(parser.value("save-samples"));
            QDir().mkpath(dir.path());
            QByteArray lines;
            for (int i = 0; i < 20; ++i) {
                const model::SyntheticSample s = model::SyntheticTask::sample(seed, static_cast<uint64_t>(i));
                const QString name = QString("sample_%1.png").arg(i, 2, 10, QChar('0'));
                s.image.save(dir.filePath(name));
                QJsonArray mask;
                for (bool m : s.mask)
                    mask.append(m ? 1 : 0);
                lines += QJsonDocument(QJsonObject{{"image", name}, {"question", s.question}, {"answer", s.answer}, {"type", s.type}, {"mask", mask}})
                             .toJson(QJsonDocument::Compact)
                         + "\n";
            }
            writeOutput(dir.filePath("questions.jsonl"), lines);
        }
        const model::EvalResult r = model::evaluate(parser.value("model"), samples, seed, scheme);
        QJsonObject types;
        QByteArray text = "model " + parser.value("model").toUtf8() + ", scheme " + r.scheme.toUtf8() + ", " + QByteArray::number(r.samples)
                          + " held-out samples\n";
        for (const auto& [type, counts] : r.byType) {
            const double acc = static_cast<double>(counts.first) / counts.second;
            types[type] = QJsonObject{{"accuracy", acc}, {"correct", counts.first}, {"total", counts.second}};
            text += "  " + type.toUtf8().leftJustified(10) + QByteArray::number(100 * acc, 'f', 1) + "%  (" + QByteArray::number(counts.first) + "/"
                    + QByteArray::number(counts.second) + ")\n";
        }
        text += "  overall   " + QByteArray::number(100 * r.accuracy(), 'f', 1) + "%\n  grounding per layer (1.0 = chance):";
        QJsonArray grounding;
        for (double g : r.grounding) {
            grounding.append(g);
            text += " " + QByteArray::number(g, 'f', 2);
        }
        text += "\n";
        QJsonObject json{{"model", parser.value("model")}, {"scheme", r.scheme}, {"samples", r.samples}, {"seed", static_cast<double>(seed)},
                         {"accuracy", r.accuracy()},
                         {"by_type", types}, {"grounding", grounding}};
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

// `ropescope train`: a tiny Qwen2-VL on the bundled models' synthetic grounding task.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "core/geometry/errors.h"
#include "core/model/engine/model_config.h"
#include "core/model/training/tiny_model.h"
#include "core/model/training/trainer.h"

#include <QDir>

#include <cstdio>

namespace ropescope::cli {

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
    o.output = parser.value("output");
    o.from = parser.value("from");
    refuseLayoutOnlyFlags(parser);
    // The AGE schedule is checked against the layers of the model that trains: the base's, or the tiny one's.
    o.scheme = runModelCommand([&] {
        const int layers =
            o.from.isEmpty() ? model::kTinyModelLayers : model::loadModelConfig(QDir(o.from).filePath("config.json")).text.layers;
        return modelSchemeFrom(parser, layers);
    });
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

} // namespace ropescope::cli

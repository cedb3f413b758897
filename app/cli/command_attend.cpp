// `ropescope attend`: an image and a question through a VLM under any position scheme; the answer, a
// text->image attention heatmap, the captured attention, the positions used and a per-layer summary.
#include "app/cli/attend_schemes.h"
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/atomic_file.h"
#include "views/charts/chart_export.h"

#include <QDir>
#include <QJsonDocument>

#include <cstdio>
#include <optional>

namespace ropescope::cli {

int runAttend(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addAttentionOptions(parser);
    parser.addOption({"output", "Directory for answer.txt, heatmap.png, attention.safetensors, positions.csv, summary.json "
                                "(and difference.png with --difference).", "DIR"});
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output is required");
    if (parser.isSet("layout"))
        throw UsageError("--layout: attend derives the layout from the prompt and the image");
    const AttentionOptions options = parseAttentionOptions(parser);

    return runModelCommand([&] {
        const std::unique_ptr<ModelOnDevice> model = ModelOnDevice::load(options.modelDir, options.device, options.dtype);
        const int layers = model->vlm->config().text.layers;
        // With --schemes the first entry is the run whose heatmap, tensors and summary are written.
        const std::vector<model::SchemeEntry> entries = parseSchemeEntries(options.schemes, layers);
        AttentionOutcome r = runAttentionOnce(*model, options, entries.empty() ? modelScheme(parseModelSchemeOptions(parser, layers, model::ownSchemeKind(model->vlm->config()))) : entries.front().scheme);
        std::optional<SchemesOutcome> compared;
        if (!entries.empty()) {
            compared = runAttentionSchemes(*model, options, entries, r.run);
            r.summary["schemes"] = compared->rows;
        }

        const QDir out(parser.value("output"));
        if (!QDir().mkpath(out.path()))
            throw Failure(out.path().toStdString() + ": cannot create the output directory");
        // All files of one run or none: a folder never mixes two runs' outputs.
        io::StagedFiles staged(out.path());
        QStringList written;
        const auto stage = [&](const QString& name, const QByteArray& data) {
            staged.stage(name, data);
            written << name;
        };
        stage("answer.txt", r.answer.toUtf8() + "\n");
        stage("heatmap.png", views::encodePng(r.heatmapFigure, r.summary));
        if (!r.difference.isNull())
            stage("difference.png", views::encodePng(r.difference, r.summary));
        stage("attention.safetensors", r.tensorFile());
        stage("positions.csv", r.positionsCsv());
        stage("summary.json", QJsonDocument(r.summary).toJson());
        if (options.perToken) {
            stage(options.figureName("tokens"), r.tokenSheet(options.figureFormat));
            stage("tokens.json", r.tokensJson());
        }
        if (options.layersHeads) {
            stage(options.figureName("layers_heads"), r.layersHeadsFigure(options.figureFormat));
            stage("layers_heads.csv", r.layersHeadsCsv());
        }
        if (options.ownPrior) {
            stage(options.figureName("own_prior"), r.ownPriorFigure(options.figureFormat));
            stage("own_prior.csv", r.ownPriorCsv());
        }
        if (options.relevancy)
            stage("relevancy.png", views::encodePng(r.relevancyMap, r.summary));
        if (options.region) {
            stage(options.figureName("region"), r.regionFigure(options.figureFormat));
            stage("region.csv", r.regionCsv());
        }
        if (compared) {
            stage(options.figureName("schemes"), compared->figure(options.figureFormat, options.heat));
            stage("schemes.csv", compared->csv());
        }
        // An earlier run's optional outputs would not match this run.
        QStringList optional{"difference.png", "relevancy.png", "tokens.json", "layers_heads.csv", "schemes.csv", "own_prior.csv", "region.csv"};
        for (const char* stem : {"tokens", "layers_heads", "schemes", "own_prior", "region"})
            for (const char* ext : {".png", ".svg", ".pdf"})
                optional << QString(stem) + ext;
        for (const QString& name : optional)
            if (!written.contains(name))
                staged.removeStale(name);
        staged.commit();
        if (!r.run.prompt.unknownWords.isEmpty())
            std::fprintf(stderr, "warning: %s\n", terminalSafe(model::unknownWordsNote(r.run.prompt.unknownWords).toStdString()).c_str());
        std::printf("%s\n", terminalSafe(r.answer.toStdString()).c_str());
        return 0;
    });
}

} // namespace ropescope::cli

// `ropescope attend`: an image and a question through a VLM under any position scheme; the answer, a
// text->image attention heatmap, the captured attention, the positions used and a per-layer summary.
#include "attend_run.h"
#include "charts/chart_export.h"
#include "cli_error.h"
#include "commands.h"
#include "io/atomic_file.h"
#include "model_options.h"

#include <QDir>
#include <QJsonDocument>

#include <cstdio>

namespace ropescope::cli {

int runAttend(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addAttendOptions(parser);
    parser.addOption({"output", "Directory for answer.txt, heatmap.png, attention.safetensors, positions.csv, summary.json "
                                "(and difference.png with --difference).", "DIR"});
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output is required");
    if (parser.isSet("layout"))
        throw UsageError("--layout: attend derives the layout from the prompt and the image");
    const AttendOptions options = parseAttendOptions(parser);

    return runModelCommand([&] {
        const std::unique_ptr<AttendModel> model = AttendModel::load(options.modelDir, options.device, options.dtype);
        const SchemeRequest scheme = parseModelSchemeOptions(parser, model->vlm->config().text.layers);
        const AttendOutcome r = runAttendOnce(*model, options, scheme);

        const QDir out(parser.value("output"));
        if (!QDir().mkpath(out.path()))
            throw Failure(out.path().toStdString() + ": cannot create the output directory");
        // All files of one run or none: a folder never mixes two runs' outputs.
        io::StagedFiles files(out.path());
        files.stage("answer.txt", r.answer.toUtf8() + "\n");
        files.stage("heatmap.png", views::encodePng(r.heatmap, r.summary));
        if (!r.difference.isNull())
            files.stage("difference.png", views::encodePng(r.difference, r.summary));
        files.stage("attention.safetensors", r.tensorFile());
        files.stage("positions.csv", r.positionsCsv());
        files.stage("summary.json", QJsonDocument(r.summary).toJson());
        if (r.difference.isNull())
            files.removeStale("difference.png"); // an earlier --difference run's map would not match this run
        files.commit();
        std::printf("%s\n", qPrintable(r.answer));
        return 0;
    });
}

} // namespace ropescope::cli

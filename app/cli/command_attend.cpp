// `ropescope attend`: an image and a question through a VLM under any position scheme; the answer, a
// text->image attention heatmap, the captured attention, the positions used and a per-layer summary.
#include "app/cli/attend_output_table.h"
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
    parser.addOption({"output",
                      "Directory for answer.txt, heatmap.png, attention.safetensors, positions.csv, summary.json "
                      "(and difference.png with --difference).",
                      "DIR"});
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output is required");
    if (parser.isSet("layout"))
        throw UsageError("--layout: attend derives the layout from the prompt and the image");
    const AttentionOptions options = parseAttentionOptions(parser);

    return runModelCommand([&] {
        const std::unique_ptr<ModelOnDevice> model = ModelOnDevice::load(options.modelDir, options.device, options.dtype);
        // With --schemes the first entry is the run whose heatmap, tensors and summary are written.
        const AttentionAsAsked asked = runAttentionAsAsked(*model, parser, options);
        const AttentionOutcome& r = asked.run;

        const QDir out(parser.value("output"));
        if (!QDir().mkpath(out.path()))
            throw Failure(out.path().toStdString() + ": cannot create the output directory");
        // All files of one run or none: a folder never mixes two runs' outputs. Every output the flags enable
        // (the table in attend_output_table.cpp); an earlier run's files of the others would not match this run.
        io::StagedFiles staged(out.path());
        const AttendResult result{r, asked.compared ? &*asked.compared : nullptr, options};
        for (const AttendOutput& row : attendOutputs()) {
            const QString name = attendFileName(row, options.figureFormat);
            if (row.enabled(options))
                staged.stage(name, row.write(result, options.figureFormat));
            for (const QString& other : attendFileNames(row))
                if (other != name || !row.enabled(options))
                    staged.removeStale(other);
        }
        staged.commit();
        if (!r.run.prompt.unknownWords.isEmpty())
            std::fprintf(stderr, "warning: %s\n", terminalSafe(model::unknownWordsNote(r.run.prompt.unknownWords).toStdString()).c_str());
        std::printf("%s\n", terminalSafe(r.answer.toStdString()).c_str());
        return 0;
    });
}

} // namespace ropescope::cli

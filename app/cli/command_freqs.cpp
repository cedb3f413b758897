// `ropescope freqs`: which axis drives each rotary frequency pair of a scheme, how far each pair turns
// across the layout's visual grids, and how the positional prior decays along each axis.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/figure_options.h"
#include "app/cli/freqs_report.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/geometry/errors.h"

namespace ropescope::cli {

int runFreqs(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addRotaryOptions(parser);
    parser.addOptions({
        {"output", "Write CSV (default, standard output without --output), .json, or a figure .png/.svg/.pdf.", "F"},
        {"resolution", "Figure size WxH in pixels (default 1200x750).", "WxH"},
        {"format", "csv or json, whatever --output is called (default: by its extension; csv on standard output).", "FMT"},
    });
    parseOrThrow(parser, args);
    const QString format = parser.value("format");
    if (parser.isSet("format") && format != "csv" && format != "json")
        throw UsageError("--format: unknown format '" + format.toStdString() + "' (expected csv or json)");
    GeometryRequest req = parseGeometryOptions(parser, parseRotaryOptions(parser));
    applyRotaryForms(parser, req);
    const QSize size = parser.isSet("resolution") ? parseResolution(parser) : QSize(1200, 750);
    QByteArray bytes;
    try {
        bytes = frequencyReport(req, parser.value("output"), size, format);
    } catch (const geometry::InvalidInput& e) {
        throw usageError(e);
    }
    writeOutput(parser.value("output"), bytes);
    return 0;
}

} // namespace ropescope::cli

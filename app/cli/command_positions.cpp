#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/io/position_table_io.h"

#include <QJsonArray>

namespace ropescope::cli {

int runPositions(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    parser.addOptions({
        {"format", "Output format: csv or json (default: json if --output ends in .json, else csv).", "FMT"},
        {"output", "Write to this file (atomically) instead of standard output.", "F"},
    });
    parseOrThrow(parser, args);
    const GeometryRequest req = parseGeometryOptions(parser);

    const QString output = parser.value("output");
    QString format = parser.value("format");
    if (format.isEmpty())
        format = output.endsWith(".json", Qt::CaseInsensitive) ? "json" : "csv";
    if (format != "csv" && format != "json")
        throw UsageError("--format: unknown format '" + format.toStdString() + "' (expected csv or json)");

    const geometry::PositionTable table = req.build();
    if (format == "csv") {
        writeOutput(output, io::positionTableCsv(table));
        return 0;
    }
    QJsonObject parameters = io::schemeParamsJson(req.params);
    if (req.age) {
        parameters["age"] = QString::fromStdString(req.age->name);
        parameters["age_pattern"] = QString::fromStdString(req.age->pattern());
        parameters["layer"] = req.layer;
        parameters["layer_scheme"] = QString::fromStdString(table.schemeLabel());
    }
    writeOutput(output, io::positionTableJson(table, parameters));
    return 0;
}

} // namespace ropescope::cli

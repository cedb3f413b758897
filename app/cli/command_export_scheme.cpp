// `ropescope export-scheme`: a built-in scheme with its parameters as a Python scheme file (numpy only).
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/user_schemes/python_scheme.h"
#include "core/user_schemes/scheme_export.h"

namespace ropescope::cli {

int runExportScheme(const QStringList& args)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Writes a built-in scheme, with the parameters given, as a self-contained numpy-only Python module: "
                                     "positions(layout, **params), PARAMETERS, COMPONENTS, allocation(head_dim) and a get_rope_index "
                                     "adapter for training code. Load it back with --scheme FILE.py.");
    addGeometryOptions(parser);
    parser.addOption({"output", "The Python file to write (.py).", "FILE"});
    parseOrThrow(parser, args);
    if (!parser.isSet("scheme"))
        throw UsageError("--scheme is required: the built-in scheme to export");
    if (user_schemes::isPythonSchemePath(parser.value("scheme").toStdString()) || parser.isSet("positions"))
        throw UsageError("--scheme: export-scheme writes a built-in scheme; this one is already a file");
    for (const char* flag : {"layout", "layer", "layers", "age"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": an exported scheme places any layout, one table for every layer (no AGE)");
    const QString output = parser.value("output");
    if (!output.endsWith(".py"))
        throw UsageError("--output: the Python file to write, ending in .py");
    const SchemeRequest req = parseSchemeOptions(parser, geometry::SchemeKind::Mrope, geometry::kDefaultAgeLayers);
    QString provenance = "ropescope export-scheme";
    for (const QString& a : args.mid(1))
        provenance += " " + a;
    QByteArray module;
    try {
        module = user_schemes::exportSchemeModule(req.params, provenance.toStdString());
    } catch (const geometry::InvalidInput& e) {
        throw usageError(e);
    }
    writeOutput(output, module);
    return 0;
}

} // namespace ropescope::cli

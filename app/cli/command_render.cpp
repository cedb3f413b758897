#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/figure_options.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "views/charts/chart_export.h"
#ifdef ROPESCOPE_WITH_RENDER
#include "views/render/offscreen_view.h"
#endif

#include <QBuffer>
#include <QImageWriter>
#include <QJsonDocument>

namespace ropescope::cli {

int runRender(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addFigureOptions(parser);
    parser.addOptions({
        {"output", "PNG file to write (atomically).", "F"},
        {"resolution", "Image size WxH in pixels (default 1200x900).", "WxH"},
    });
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output is required, e.g. --output cone.png");
    if (!parser.value("output").endsWith(".png", Qt::CaseInsensitive))
        throw UsageError("--output: render writes PNG (parameters in its text chunk); name the file *.png");
    const GeometryRequest req = parseGeometryOptions(parser);
    const QSize size = parseResolution(parser);
    const geometry::PositionTable table = req.build();
    const FigureOptions figure = parseFigureOptions(parser, table);

    QImage image;
#ifdef ROPESCOPE_WITH_RENDER
    try {
        views::OffscreenView view(size);
        view.scene().update(table, figure.scene);
        view.scene().applyCamera(figure.camera);
        image = view.grab();
    } catch (const std::runtime_error& e) {
        throw Failure(e.what());
    }
#else
    throw Failure("this build has no VTK (configured with -DROPESCOPE_RENDER=OFF): no 3-D figures");
#endif
    writeOutput(parser.value("output"), views::encodePng(image, figureMetadata(req, figure, size)));
    return 0;
}

} // namespace ropescope::cli

#include "cli_error.h"
#include "commands.h"
#include "figure_options.h"
#include "geometry_options.h"
#include "output.h"
#include "charts/chart_export.h"
#include "render/offscreen_view.h"

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
    const GeometryRequest req = parseGeometryOptions(parser);
    const QSize size = parseResolution(parser);
    const geometry::PositionTable table = req.build();
    const FigureOptions figure = parseFigureOptions(parser, table);

    QImage image;
    try {
        views::OffscreenView view(size);
        view.scene().update(table, figure.scene);
        view.scene().applyCamera(figure.camera);
        image = view.grab();
    } catch (const std::runtime_error& e) {
        throw Failure(e.what());
    }
    writeOutput(parser.value("output"), views::encodePng(image, figureMetadata(req, figure, size)));
    return 0;
}

} // namespace ropescope::cli

#include "app/cli/figure_options.h"

#include "app/cli/cli_error.h"
#include "core/io/position_table_io.h"

#include <QBuffer>
#include <QImageWriter>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

namespace ropescope::cli {
using namespace views;

void addFigureOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"camera", "Camera preset: isometric, axis (down the text axis) or side (default isometric).", "PRESET"},
        {"select", "Text token whose cone lines are drawn (default: the one before the first image; -1: none).", "N"},
        {"colour", "Visual token colours: rowcol or distance (to the selected token).", "MODE"},
        {"cone", "Draw the translucent cone from the selected token to each Circle-RoPE ring."},
        {"labels", "Label text tokens with their indices."},
        {"dark", "Dark background."},
        {"projection", "4-component tables: hadamard (default) or components a,b,c (e.g. 0,1,2).", "P"},
    });
}

int defaultSelectedToken(const geometry::PositionTable& table)
{
    if (!table.blocks.empty()) {
        const int before = table.blocks.front().begin - 1;
        if (before >= 0 && table.isText(before))
            return before;
    }
    return table.textTokens.empty() ? -1 : table.textTokens.front();
}

FigureOptions parseFigureOptions(const QCommandLineParser& parser, const geometry::PositionTable& table)
{
    FigureOptions f;
    if (parser.isSet("camera")) {
        const auto camera = session::cameraPresetFromName(parser.value("camera").toStdString());
        if (!camera)
            throw UsageError("--camera: unknown preset '" + parser.value("camera").toStdString() + "' (expected isometric, axis or side)");
        f.camera = *camera;
    }

    f.scene.selectedToken = defaultSelectedToken(table);
    if (parser.isSet("select")) {
        const int token = parseInteger(parser, "select");
        if (token != -1 && (token < 0 || token >= table.size() || !table.isText(token)))
            throw UsageError("--select: token " + std::to_string(token) + " is not a text token of the layout");
        f.scene.selectedToken = token;
    }
    if (parser.isSet("colour")) {
        // Image patches need an image the figure commands do not take.
        const auto colour = session::colourModeFromName(parser.value("colour").toStdString());
        if (!colour || *colour == ColourMode::ImagePatch)
            throw UsageError("--colour: unknown mode '" + parser.value("colour").toStdString() + "' (expected rowcol or distance)");
        f.scene.colour = *colour;
    }
    f.scene.showConeSurface = parser.isSet("cone");
    f.scene.showLabels = parser.isSet("labels");
    f.scene.darkBackground = parser.isSet("dark");
    if (parser.isSet("projection")) {
        const auto projection = session::projectionFromName(parser.value("projection").toStdString());
        if (!projection)
            throw UsageError("--projection: expected hadamard or three component indices 0-3, e.g. 0,1,2");
        f.scene.projection = *projection;
    }
    return f;
}

QSize parseResolution(const QCommandLineParser& parser)
{
    if (!parser.isSet("resolution"))
        return {1200, 900};
    static const QRegularExpression re("^(\\d{1,5})x(\\d{1,5})$");
    const auto m = re.match(parser.value("resolution"));
    const int w = m.captured(1).toInt(), h = m.captured(2).toInt();
    if (!m.hasMatch() || w < 16 || h < 16 || w > 8192 || h > 8192)
        throw UsageError("--resolution: expected WxH from 16x16 to 8192x8192, got '" + parser.value("resolution").toStdString() + "'");
    return {w, h};
}

session::ExplorerState explorerState(const GeometryRequest& req, const FigureOptions& figure)
{
    session::ExplorerState s;
    s.layout = req.layout.toString();
    s.params = req.params;
    if (req.age) {
        s.age = req.age->name;
        s.ageLayers = req.age->layers();
        s.layer = req.layer;
    }
    s.selectedToken = figure.scene.selectedToken;
    s.colourMode = figure.scene.colour;
    s.projection = figure.scene.projection;
    s.showConeSurface = figure.scene.showConeSurface;
    s.showLabels = figure.scene.showLabels;
    s.darkBackground = figure.scene.darkBackground;
    s.camera = figure.camera;
    return s;
}

QJsonObject figureMetadata(const GeometryRequest& req, const FigureOptions& figure, QSize size)
{
    QJsonObject o = io::schemeParamsJson(req.params);
    o["layout"] = QString::fromStdString(req.layout.toString());
    if (req.age) {
        o["age"] = QString::fromStdString(req.age->name);
        o["layer"] = req.layer;
        o["layers"] = req.age->layers();
    }
    o["camera"] = session::cameraPresetName(figure.camera);
    o["selected_token"] = figure.scene.selectedToken;
    o["colour"] = session::colourModeName(figure.scene.colour);
    o["projection"] = QString::fromStdString(session::projectionName(figure.scene.projection));
    o["cone"] = figure.scene.showConeSurface;
    o["labels"] = figure.scene.showLabels;
    o["dark"] = figure.scene.darkBackground;
    o["resolution"] = QString("%1x%2").arg(size.width()).arg(size.height());
    o["generator"] = QString("ropescope ") + ROPESCOPE_VERSION;
    return o;
}

} // namespace ropescope::cli

#include "figure_options.h"

#include "cli_error.h"
#include "io/position_table_io.h"

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
    const QString camera = parser.value("camera");
    if (camera.isEmpty() || camera == "isometric")
        f.camera = CameraPreset::Isometric;
    else if (camera == "axis")
        f.camera = CameraPreset::DownTextAxis;
    else if (camera == "side")
        f.camera = CameraPreset::Side;
    else
        throw UsageError("--camera: unknown preset '" + camera.toStdString() + "' (expected isometric, axis or side)");

    f.scene.selectedToken = defaultSelectedToken(table);
    if (parser.isSet("select")) {
        const int token = parseInteger(parser, "select");
        if (token != -1 && (token < 0 || token >= table.size() || !table.isText(token)))
            throw UsageError("--select: token " + std::to_string(token) + " is not a text token of the layout");
        f.scene.selectedToken = token;
    }
    const QString colour = parser.value("colour");
    if (colour == "distance")
        f.scene.colour = ColourMode::DistanceToSelected;
    else if (!colour.isEmpty() && colour != "rowcol")
        throw UsageError("--colour: unknown mode '" + colour.toStdString() + "' (expected rowcol or distance)");
    f.scene.showConeSurface = parser.isSet("cone");
    f.scene.showLabels = parser.isSet("labels");
    f.scene.darkBackground = parser.isSet("dark");
    const QString projection = parser.value("projection");
    if (!projection.isEmpty() && projection != "hadamard") {
        static const QRegularExpression triple("^([0-3]),([0-3]),([0-3])$");
        const auto m = triple.match(projection);
        if (!m.hasMatch())
            throw UsageError("--projection: expected hadamard or three component indices 0-3, e.g. 0,1,2");
        f.scene.projection = Projection4D::Components;
        f.scene.components = {m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt()};
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
    s.colourMode = figure.scene.colour == ColourMode::DistanceToSelected ? "distance" : "rowcol";
    s.showConeSurface = figure.scene.showConeSurface;
    s.showLabels = figure.scene.showLabels;
    s.darkBackground = figure.scene.darkBackground;
    const char* cameras[] = {"isometric", "axis", "side"};
    s.camera = cameras[static_cast<int>(figure.camera)];
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
    const char* cameras[] = {"isometric", "axis", "side"};
    o["camera"] = cameras[static_cast<int>(figure.camera)];
    o["selected_token"] = figure.scene.selectedToken;
    o["colour"] = figure.scene.colour == ColourMode::DistanceToSelected ? "distance" : "rowcol";
    o["cone"] = figure.scene.showConeSurface;
    o["labels"] = figure.scene.showLabels;
    o["dark"] = figure.scene.darkBackground;
    o["resolution"] = QString("%1x%2").arg(size.width()).arg(size.height());
    o["generator"] = "ropescope 0.1.0";
    return o;
}

} // namespace ropescope::cli

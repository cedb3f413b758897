#pragma once
#include "app/cli/geometry_options.h"
#include "core/geometry/position_table.h"
#include "core/session/explorer_state.h"
#include "views/scene/scene_options.h"

#include <QCommandLineParser>
#include <QImage>
#include <QJsonObject>
#include <QSize>

namespace ropescope::cli {

// The view flags shared by `render` and batch cone items.
struct FigureOptions {
    views::SceneOptions scene;
    views::CameraPreset camera = views::CameraPreset::Isometric;
};

void addFigureOptions(QCommandLineParser& parser);
FigureOptions parseFigureOptions(const QCommandLineParser& parser, const geometry::PositionTable& table);
QSize parseResolution(const QCommandLineParser& parser);

// The text token a figure selects by default: the one just before the first image (where a question
// starts), else the first text token, else none.
int defaultSelectedToken(const geometry::PositionTable& table);

// The explorer state a request and figure options describe (for readouts and their charts).
session::ExplorerState explorerState(const GeometryRequest& req, const FigureOptions& figure);

// Everything that shaped a figure, recorded in the PNG's text chunk "ropescope".
QJsonObject figureMetadata(const GeometryRequest& req, const FigureOptions& figure, QSize size);

} // namespace ropescope::cli

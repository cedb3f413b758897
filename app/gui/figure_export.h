#pragma once
// Exports of the Attention tab's views as the CLI writes them: any chart view's figure as PNG/SVG/PDF
// (format by the file's extension) with the run recorded as metadata, and heatmaps as a picture with their
// colour bar and caption under them.
#include "views/charts/attention_heatmap.h"
#include "views/charts/chart_export.h"

#include <QImage>
#include <QJsonObject>
#include <QString>
#include <QStringList>

class QWidget;

namespace ropescope::gui {

// Writes `painter` at `size` to `path` (.png, .svg or .pdf), replacing only a regular file; throws
// std::runtime_error naming the file.
void writeFigure(const QString& path, const views::ChartPainter& painter, QSize size, const QJsonObject& metadata);

// Asks where (the last export folder, else home), then writes; a failure is said in a message box. Returns
// the path written, or empty.
QString exportFigureWithDialog(QWidget* parent, const QString& title, const QString& suggestedName, const views::ChartPainter& painter,
                               QSize size, const QJsonObject& metadata);

// Says in the window's status bar that `path` was written (every export confirms, as the Bias view's did).
void confirmExport(QWidget* anyWidgetOfTheWindow, const QString& path);

} // namespace ropescope::gui

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

// Asks where (the last export folder, else home), then writes; a failure is said in a message box. A figure
// with a table (`table` not empty) also gets it beside it as <name>.csv, as `attend` writes both; an existing
// <name>.csv is replaced only when the user says so. Returns the figure's path, or empty.
QString exportFigureWithDialog(QWidget* parent, const QString& title, const QString& suggestedName, const views::ChartPainter& painter,
                               QSize size, const QJsonObject& metadata, const QByteArray& table = {});
// The table's file beside a figure: "out/region.svg" -> "out/region.csv".
QString tableBesideFigure(const QString& figurePath);
// Writes the figure, then its table beside it unless `table` is empty or a file of that name exists and
// `replaceTable` is false. Returns the table's path when written, else empty; throws std::runtime_error.
QString writeFigureAndTable(const QString& path, const views::ChartPainter& painter, QSize size, const QJsonObject& metadata,
                            const QByteArray& table, bool replaceTable);

// Says in the window's status bar that `path` (and `alsoWritten`, its table) was written (every export
// confirms, as the Bias view's did).
void confirmExport(QWidget* anyWidgetOfTheWindow, const QString& path, const QString& alsoWritten = {});

} // namespace ropescope::gui

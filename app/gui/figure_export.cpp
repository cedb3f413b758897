#include "app/gui/figure_export.h"

#include "app/gui/file_dialogs.h"
#include "core/io/atomic_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMainWindow>
#include <QStatusBar>
#include <QMessageBox>

#include <stdexcept>

namespace ropescope::gui {

void writeFigure(const QString& path, const views::ChartPainter& painter, QSize size, const QJsonObject& metadata)
{
    try {
        const views::FigureFormat format = views::figureFormatFor(path);
        io::writeFileAtomically(path, views::renderFigure(painter, size, format, metadata));
        // SVG and PDF readers drop custom metadata: the parameters go in a sidecar, as the explorer's chart exports write
        // it (GUI.md promises one for every figure; region.pdf had only its title: issue 72 item 6).
        if (format != views::FigureFormat::Png)
            io::writeFileAtomically(path + ".json", QJsonDocument(metadata).toJson());
    } catch (const std::exception& e) {
        throw std::runtime_error(e.what());
    }
}

QString tableBesideFigure(const QString& figurePath)
{
    const QFileInfo figure(figurePath);
    return figure.dir().filePath(figure.completeBaseName() + ".csv");
}

QString writeFigureAndTable(const QString& path, const views::ChartPainter& painter, QSize size, const QJsonObject& metadata,
                            const QByteArray& table, bool replaceTable)
{
    writeFigure(path, painter, size, metadata);
    const QString tablePath = tableBesideFigure(path);
    if (table.isEmpty() || (QFileInfo::exists(tablePath) && !replaceTable))
        return {};
    try {
        io::writeFileAtomically(tablePath, table);
    } catch (const std::exception& e) {
        throw std::runtime_error(e.what());
    }
    return tablePath;
}

QString exportFigureWithDialog(QWidget* parent, const QString& title, const QString& suggestedName, const views::ChartPainter& painter,
                               QSize size, const QJsonObject& metadata, const QByteArray& table)
{
    if (!painter) {
        QMessageBox::warning(parent, title, "Nothing to export yet: run the model first.");
        return {};
    }
    const QString path = chooseSaveFile(parent, title, suggestedName, "Figures (*.png *.svg *.pdf)");
    if (path.isEmpty())
        return {};
    // The dialog asked about the figure's file only: a table of the same name already there is the user's to keep.
    const QString tablePath = tableBesideFigure(path);
    const bool replaceTable = table.isEmpty() || !QFileInfo::exists(tablePath) ||
        QMessageBox::question(parent, title,
                              QFileInfo(tablePath).fileName() + " already exists beside the figure. Replace it with this table?",
                              QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
    QString tableWritten;
    try {
        tableWritten = writeFigureAndTable(path, painter, size, metadata, table, replaceTable);
    } catch (const std::exception& e) {
        QMessageBox::warning(parent, title, e.what());
        return {};
    }
    confirmExport(parent, path, tableWritten);
    return path;
}

void confirmExport(QWidget* anyWidgetOfTheWindow, const QString& path, const QString& alsoWritten)
{
    auto* window = anyWidgetOfTheWindow ? qobject_cast<QMainWindow*>(anyWidgetOfTheWindow->window()) : nullptr;
    const auto kb = [](const QString& file) { return (QFileInfo(file).size() + 1023) / 1024; };
    QString message = QString("Exported %1 (%2 KB)").arg(path).arg(kb(path));
    if (!alsoWritten.isEmpty())
        message += QString(" and %1 (%2 KB)").arg(QFileInfo(alsoWritten).fileName()).arg(kb(alsoWritten));
    if (window)
        window->statusBar()->showMessage(message, 8000);
}

} // namespace ropescope::gui

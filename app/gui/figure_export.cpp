#include "app/gui/figure_export.h"

#include "app/gui/file_dialogs.h"
#include "core/io/atomic_file.h"

#include <QFileInfo>
#include <QMainWindow>
#include <QStatusBar>
#include <QMessageBox>

#include <stdexcept>

namespace ropescope::gui {

void writeFigure(const QString& path, const views::ChartPainter& painter, QSize size, const QJsonObject& metadata)
{
    try {
        io::writeFileAtomically(path, views::renderFigure(painter, size, views::figureFormatFor(path), metadata));
    } catch (const std::exception& e) {
        throw std::runtime_error(e.what());
    }
}

QString exportFigureWithDialog(QWidget* parent, const QString& title, const QString& suggestedName, const views::ChartPainter& painter,
                               QSize size, const QJsonObject& metadata)
{
    if (!painter) {
        QMessageBox::warning(parent, title, "Nothing to export yet: run the model first.");
        return {};
    }
    const QString path = chooseSaveFile(parent, title, suggestedName, "Figures (*.png *.svg *.pdf)");
    if (path.isEmpty())
        return {};
    try {
        writeFigure(path, painter, size, metadata);
    } catch (const std::exception& e) {
        QMessageBox::warning(parent, title, e.what());
        return {};
    }
    confirmExport(parent, path);
    return path;
}

void confirmExport(QWidget* anyWidgetOfTheWindow, const QString& path)
{
    auto* window = anyWidgetOfTheWindow ? qobject_cast<QMainWindow*>(anyWidgetOfTheWindow->window()) : nullptr;
    if (window)
        window->statusBar()->showMessage(QString("Exported %1 (%2 KB)").arg(path).arg((QFileInfo(path).size() + 1023) / 1024), 8000);
}

} // namespace ropescope::gui

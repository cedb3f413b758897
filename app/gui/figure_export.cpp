#include "app/gui/figure_export.h"

#include "app/gui/file_dialogs.h"
#include "core/io/atomic_file.h"

#include <QFontMetrics>
#include <QFileInfo>
#include <QMainWindow>
#include <QStatusBar>
#include <QMessageBox>
#include <QPainter>

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

QImage captionedHeatmap(const QImage& overlay, const views::HeatmapOptions& options, const QStringList& caption)
{
    const int width = std::max(overlay.width(), 360);
    const QImage bar = views::colourBar(options, std::max(120, width / 2), 14); // as the view shows it

    QFont font;
    font.setPixelSize(13);
    const QFontMetrics metrics(font);
    const int line = metrics.height(), pad = 8;
    const QStringList& lines = caption; // each wrapped to the picture's width: nothing is cut
    const int captionHeight = [&] {
        int h = 0;
        for (const QString& text : lines)
            h += metrics.boundingRect(QRect(0, 0, width - 2 * pad, 1 << 16), Qt::TextWordWrap, text).height();
        return h;
    }();
    QImage out(width, overlay.height() + pad + bar.height() + line + pad + captionHeight + pad, QImage::Format_RGB888);
    out.fill(Qt::white);
    QPainter p(&out);
    p.setFont(font);
    p.drawImage((width - overlay.width()) / 2, 0, overlay);
    int y = overlay.height() + pad;
    const int barX = (width - bar.width()) / 2;
    p.setPen(Qt::black);
    p.drawText(QRect(pad, y, barX - 2 * pad, bar.height()), Qt::AlignRight | Qt::AlignVCenter, "least");
    p.drawImage(barX, y, bar);
    p.drawText(QRect(barX + bar.width() + pad, y, width, bar.height()), Qt::AlignLeft | Qt::AlignVCenter, "most");
    y += bar.height() + line / 2 + pad;
    for (const QString& text : lines) {
        const QRect box = metrics.boundingRect(QRect(pad, y, width - 2 * pad, 1 << 16), Qt::TextWordWrap, text);
        p.drawText(QRect(pad, y, width - 2 * pad, box.height()), Qt::TextWordWrap, text);
        y += box.height();
    }
    return out;
}

} // namespace ropescope::gui

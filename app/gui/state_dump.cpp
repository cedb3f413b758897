#include "app/gui/state_dump.h"

#include "app/gui/message_bar.h"
#include "views/widgets/fit_image.h"

#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QTabBar>
#include <QTimer>
#include <QToolTip>
#include <QWidget>

#include <memory>

namespace ropescope::gui {
namespace {

QJsonObject describe(const QWidget* w)
{
    const QPoint topLeft = w->mapToGlobal(QPoint(0, 0));
    QJsonObject o{{"x", topLeft.x()},
                  {"y", topLeft.y()},
                  {"w", w->width()},
                  {"h", w->height()},
                  {"focus", w->hasFocus() || (w->focusProxy() && w->focusProxy()->hasFocus())},
                  {"enabled", w->isEnabled()}};
    if (auto* e = qobject_cast<const QLineEdit*>(w))
        o["text"] = e->text();
    else if (auto* s = qobject_cast<const QAbstractSpinBox*>(w))
        o["text"] = s->text();
    else if (auto* c = qobject_cast<const QComboBox*>(w))
        o["text"] = c->currentText();
    else if (auto* sl = qobject_cast<const QAbstractSlider*>(w))
        o["value"] = sl->value();
    else if (auto* b = qobject_cast<const QCheckBox*>(w))
        o["checked"] = b->isChecked();
    else if (auto* l = qobject_cast<const QLabel*>(w))
        o["text"] = QString(l->text()).remove(QChar(0x200B)); // as read: without the column's break hints
    if (auto* bar = qobject_cast<const MessageBar*>(w)) {     // the status bar: its message, as drawn, and its tooltip
        o["text"] = bar->currentMessage();
        o["drawn"] = bar->shownMessage();
        o["toolTip"] = bar->toolTip();
    }
    if (auto* bar = qobject_cast<const QTabBar*>(w)) { // each tab's place, to click one
        QJsonArray tabs;
        for (int i = 0; i < bar->count(); ++i) {
            const QRect r = bar->tabRect(i);
            tabs.append(QJsonObject{
                {"x", topLeft.x() + r.x()}, {"y", topLeft.y() + r.y()}, {"w", r.width()}, {"h", r.height()}, {"text", bar->tabText(i)}});
        }
        o["tabs"] = tabs;
        o["current"] = bar->currentIndex();
    }
    // Where a picture is drawn in the control, which may reach past its edges (a cropped map: issue 56 item 1).
    QRect shown;
    if (auto* f = qobject_cast<const views::FitImage*>(w))
        shown = f->shownRect();
    else if (auto* l = qobject_cast<const QLabel*>(w); l && !l->pixmap().isNull())
        shown = QStyle::alignedRect(l->layoutDirection(), l->alignment(), l->pixmap().deviceIndependentSize().toSize(), l->contentsRect());
    if (!shown.isNull())
        o["shown"] = QJsonObject{{"x", shown.x()}, {"y", shown.y()}, {"w", shown.width()}, {"h", shown.height()}};
    return o;
}

} // namespace

void startStateDump(QWidget* window, const QString& autosavePath, const QString& file)
{
    auto* timer = new QTimer(window);
    auto last = std::make_shared<QByteArray>();
    QObject::connect(timer, &QTimer::timeout, window, [window, autosavePath, file, last] {
        QJsonObject widgets;
        for (const QWidget* w : window->findChildren<QWidget*>()) {
            QString name = w->objectName();
            if (name.isEmpty() && w->parentWidget() == window && qobject_cast<const QTabBar*>(w))
                name = "dockTabs"; // the docks' tabs, where Parameters and Readouts share a column (a narrow screen)
            if (!name.isEmpty() && w->isVisible() && !name.startsWith("qt_"))
                widgets[name] = describe(w);
        }
        const QWidget* focus = QApplication::focusWidget();
        // The window's frame on the screen: whether it grew past the screen (issue 72 item 2).
        const QRect frame = window->frameGeometry();
        const QJsonObject root{
            {"autosave", autosavePath},
            {"window", QJsonObject{{"x", frame.x()}, {"y", frame.y()}, {"w", frame.width()}, {"h", frame.height()}}},
            {"widgets", widgets},
            {"toolTip", QToolTip::isVisible() ? QToolTip::text() : QString()}, // the tooltip on the screen, if one is
            {"focus",
             focus ? (focus->objectName().isEmpty() && focus->parentWidget() ? focus->parentWidget()->objectName() : focus->objectName())
                   : QString()}};
        const QByteArray bytes = QJsonDocument(root).toJson();
        if (bytes == *last)
            return;
        *last = bytes;
        QFile out(file + ".tmp");
        if (out.open(QIODevice::WriteOnly | QIODevice::Truncate) && out.write(bytes) == bytes.size()) {
            out.close();
            QFile::remove(file);
            QFile::rename(file + ".tmp", file);
        }
    });
    timer->start(200);
}

} // namespace ropescope::gui

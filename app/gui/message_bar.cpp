#include "app/gui/message_bar.h"

#include <QPainter>
#include <QSizeGrip>
#include <QStyle>
#include <QStyleOption>
#include <QTimer>

namespace ropescope::gui {

MessageBar::MessageBar(QWidget* parent) : QStatusBar(parent)
{
    setObjectName("statusBar");
    connect(this, &QStatusBar::messageChanged, this, [this] {
        laterUpdateToolTip();
        update(); // the base class repaints its own message rectangle; an elided one is drawn here
    });
}

// Where QStatusBar draws its message: from 6 px to the first visible permanent widget (while a message shows, the
// other widgets are hidden, so every visible child but the size grip is one) or the size grip, less 2 px.
QRect MessageBar::messageRect() const
{
    const bool rtl = layoutDirection() == Qt::RightToLeft;
    int left = 6, right = width() - 12;
    for (const QWidget* child : findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
        if (!child->isVisible() || child->isWindow())
            continue;
        if (rtl)
            left = std::max(left, child->x() + child->width() + 2);
        else
            right = std::min(right, qobject_cast<const QSizeGrip*>(child) ? child->x() : child->x() - 2);
    }
    return QRect(left, 0, right - left, height());
}

QString MessageBar::shownMessage() const
{
    return fontMetrics().elidedText(currentMessage(), Qt::ElideMiddle, std::max(0, messageRect().width()));
}

void MessageBar::updateToolTip()
{
    const QString message = currentMessage();
    setToolTip(!message.isEmpty() && shownMessage() != message ? message : QString());
}

// Once the bar's layout has placed its widgets for the new size or message (the room for the message depends on them).
void MessageBar::laterUpdateToolTip()
{
    QTimer::singleShot(0, this, &MessageBar::updateToolTip);
}

void MessageBar::resizeEvent(QResizeEvent* event)
{
    QStatusBar::resizeEvent(event);
    laterUpdateToolTip();
}

// QStatusBar's own painting (the panel, a frame around each visible widget, the message), with the message elided.
void MessageBar::paintEvent(QPaintEvent* event)
{
    const QString message = currentMessage();
    if (message.isEmpty() || shownMessage() == message) {
        QStatusBar::paintEvent(event);
        return;
    }
    QPainter p(this);
    QStyleOption panel;
    panel.initFrom(this);
    style()->drawPrimitive(QStyle::PE_PanelStatusBar, &panel, &p, this);
    for (QWidget* child : findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
        if (!child->isVisible() || child->isWindow() || qobject_cast<QSizeGrip*>(child))
            continue;
        QStyleOption frame(0);
        frame.rect = child->geometry().adjusted(-2, -1, 2, 1);
        frame.palette = palette();
        frame.state = QStyle::State_None;
        style()->drawPrimitive(QStyle::PE_FrameStatusBarItem, &frame, &p, child);
    }
    p.setPen(palette().windowText().color());
    p.drawText(messageRect(), Qt::AlignLeading | Qt::AlignVCenter | Qt::TextSingleLine, shownMessage());
}

} // namespace ropescope::gui

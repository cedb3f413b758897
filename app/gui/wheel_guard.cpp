#include "app/gui/wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QScrollBar>
#include <QWheelEvent>

namespace ropescope::gui {

void WheelGuard::installOnce()
{
    static WheelGuard* guard = nullptr;
    if (!guard && qApp) {
        guard = new WheelGuard(qApp);
        qApp->installEventFilter(guard);
    }
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() != QEvent::Wheel || !watched->isWidgetType())
        return false;
    auto* widget = static_cast<QWidget*>(watched);
    // A spin box's line edit receives the wheel first: judge the control it belongs to.
    QWidget* control = widget;
    if (!qobject_cast<QAbstractSpinBox*>(control) && qobject_cast<QAbstractSpinBox*>(control->parentWidget()))
        control = control->parentWidget();
    const bool guarded = qobject_cast<QAbstractSpinBox*>(control) || qobject_cast<QComboBox*>(control)
                         || (qobject_cast<QAbstractSlider*>(control) && !qobject_cast<QScrollBar*>(control));
    if (!guarded || control->hasFocus())
        return false;
    control->setFocusPolicy(Qt::StrongFocus); // a click still focuses it; then the wheel works
    for (QWidget* p = control->parentWidget(); p; p = p->parentWidget())
        if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
            QCoreApplication::sendEvent(area->viewport(), event);
            break;
        }
    return true; // never to the unfocused control
}

} // namespace ropescope::gui

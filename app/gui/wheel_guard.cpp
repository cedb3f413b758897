#include "app/gui/wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QKeyEvent>
#include <QKeySequence>
#include <QLineEdit>
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

namespace {

bool isGuarded(QWidget* control)
{
    return qobject_cast<QAbstractSpinBox*>(control) || qobject_cast<QComboBox*>(control) ||
        (qobject_cast<QAbstractSlider*>(control) && !qobject_cast<QScrollBar*>(control));
}

bool isUndoOrRedo(const QKeyEvent* key)
{
    return key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo) ||
        key->keyCombination() == QKeyCombination(Qt::ControlModifier | Qt::ShiftModifier, Qt::Key_Z);
}

} // namespace

bool WheelGuard::eventFilter(QObject* watched, QEvent* event)
{
    if (!watched->isWidgetType())
        return false;
    // Before a control is first shown: a wheel-focus policy would let Qt give it the focus on a real
    // (spontaneous) wheel event before any filter sees the wheel, and the guard below would then let it
    // through. QTest's synthetic wheel events skip that step, which is why only real X input showed it.
    if (event->type() == QEvent::Polish) {
        auto* widget = static_cast<QWidget*>(watched);
        if (isGuarded(widget) && (widget->focusPolicy() & Qt::WheelFocus) == Qt::WheelFocus)
            widget->setFocusPolicy(Qt::StrongFocus);
        return false;
    }
    // Ctrl+Z / Ctrl+Shift+Z in a spin box are the window's Undo and Redo, not the spin box's text undo
    // (which took them silently): the override is left unaccepted so the window's shortcut fires. In a text
    // field the same holds once its text is applied (not modified since): its own undo only takes back typing
    // that is not applied yet (the layout field before its pause or Enter, the Attention tab's question).
    if (event->type() == QEvent::ShortcutOverride) {
        auto* key = static_cast<QKeyEvent*>(event);
        QWidget* w = static_cast<QWidget*>(watched);
        const bool inSpinBox = qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QAbstractSpinBox*>(w->parentWidget());
        auto* field = inSpinBox ? nullptr : qobject_cast<QLineEdit*>(w);
        if ((inSpinBox || (field && !field->isModified())) && isUndoOrRedo(key)) {
            key->ignore();
            return true;
        }
        return false;
    }
    if (event->type() != QEvent::Wheel)
        return false;
    auto* widget = static_cast<QWidget*>(watched);
    // A spin box's line edit receives the wheel first: judge the control it belongs to.
    QWidget* control = widget;
    if (!qobject_cast<QAbstractSpinBox*>(control) && qobject_cast<QAbstractSpinBox*>(control->parentWidget()))
        control = control->parentWidget();
    if (!isGuarded(control) || control->hasFocus())
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

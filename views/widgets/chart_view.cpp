#include "views/widgets/chart_view.h"

#include <QMouseEvent>
#include <QPainter>

namespace ropescope::views {

ChartView::ChartView(QWidget* parent) : QWidget(parent)
{
    setAttribute(Qt::WA_OpaquePaintEvent);
}

void ChartView::setPainter(ChartPainter painter)
{
    painter_ = std::move(painter);
    update();
}

void ChartView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (painter_)
        painter_(p, QRectF(rect()));
}

void ChartView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton) {
        pressed_ = true;
        pressedAt_ = event->position();
        Q_EMIT clicked(event->position());
    }
    QWidget::mousePressEvent(event);
}

void ChartView::mouseMoveEvent(QMouseEvent* event)
{
    if (pressed_ && (event->buttons() & Qt::LeftButton))
        Q_EMIT dragged(pressedAt_, event->position());
    QWidget::mouseMoveEvent(event);
}

void ChartView::mouseReleaseEvent(QMouseEvent* event)
{
    if (pressed_ && event->button() == Qt::LeftButton) {
        pressed_ = false;
        Q_EMIT dragFinished(pressedAt_, event->position());
    }
    QWidget::mouseReleaseEvent(event);
}

} // namespace ropescope::views

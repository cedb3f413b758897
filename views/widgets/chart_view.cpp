#include "chart_view.h"

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
    if (event->button() == Qt::LeftButton)
        Q_EMIT clicked(event->position());
    QWidget::mousePressEvent(event);
}

} // namespace ropescope::views

#include "chart_view.h"

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

} // namespace ropescope::views

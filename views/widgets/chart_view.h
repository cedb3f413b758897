#pragma once
#include "views/charts/chart_export.h"

#include <QWidget>

namespace ropescope::views {

// A widget that paints one chart with the same painter used for PNG/SVG/PDF export.
class ChartView : public QWidget {
    Q_OBJECT
public:
    explicit ChartView(QWidget* parent = nullptr);
    void setPainter(ChartPainter painter);
    const ChartPainter& chartPainter() const { return painter_; }
    QSize sizeHint() const override { return {420, 260}; }
    QSize minimumSizeHint() const override { return {220, 150}; }

Q_SIGNALS:
    // A left click, in the coordinates the painter draws in (figures that can be picked from map it back).
    void clicked(QPointF position);
    // A left-button drag from where it was pressed: while moving, and once when released.
    void dragged(QPointF from, QPointF to);
    void dragFinished(QPointF from, QPointF to);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    QPointF pressedAt_;
    bool pressed_ = false;
    ChartPainter painter_;
};

} // namespace ropescope::views

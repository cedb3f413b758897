#include "views/widgets/fit_image.h"

#include <QPainter>

namespace ropescope::views {

FitImage::FitImage(QSize minimum, QWidget* parent) : QWidget(parent), minimum_(minimum)
{
    setMinimumSize(minimum);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void FitImage::setImage(const QImage& image)
{
    image_ = image;
    updateGeometry();
    update();
}

void FitImage::clear()
{
    setImage(QImage());
}

QRect FitImage::shownRect() const
{
    if (image_.isNull() || width() <= 0 || height() <= 0)
        return {};
    const QSize shown = image_.size().scaled(size(), Qt::KeepAspectRatio);
    return QRect(QPoint((width() - shown.width()) / 2, (height() - shown.height()) / 2), shown);
}

QSize FitImage::sizeHint() const
{
    // The image's own size where it is small, else the minimum grown to its aspect: the layout's stretch gives the rest.
    if (image_.isNull())
        return minimum_;
    return image_.size().scaled(minimum_.expandedTo(QSize(480, 480)), Qt::KeepAspectRatio).expandedTo(minimum_);
}

QSize FitImage::minimumSizeHint() const
{
    return minimum_;
}

void FitImage::paintEvent(QPaintEvent*)
{
    const QRect target = shownRect();
    if (target.isEmpty())
        return;
    QPainter p(this);
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawImage(target, image_);
}

} // namespace ropescope::views

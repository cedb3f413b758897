#pragma once
#include <QImage>
#include <QWidget>

namespace ropescope::views {

// An image drawn whole, scaled to fit the widget and centred, at every size the layout gives it (issue 56
// item 1). A QLabel holding a pixmap scaled once to the label's size kept that pixmap's size as its minimum:
// once the label shrank (Readouts shown again) the map was cut at both sides without a sign. This widget asks
// for no more than `minimum` and repaints from the full image on every resize.
class FitImage : public QWidget {
    Q_OBJECT
public:
    explicit FitImage(QSize minimum, QWidget* parent = nullptr);

    void setImage(const QImage& image);
    void clear();
    const QImage& image() const { return image_; }
    // Where the image is drawn, in the widget's coordinates (empty without an image).
    QRect shownRect() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return false; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QImage image_;
    QSize minimum_;
};

} // namespace ropescope::views

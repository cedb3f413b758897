#pragma once
// The window's status bar. QStatusBar cuts a message that is wider than the bar at its edge, mid-word and with no
// sign that more follows; here a long message (an error with its path, Show in 3-D's account of what it replaced)
// is elided in its middle ("...") and the whole of it is the bar's tooltip while it shows.
#include <QStatusBar>

namespace ropescope::gui {

class MessageBar : public QStatusBar {
    Q_OBJECT
public:
    explicit MessageBar(QWidget* parent = nullptr);

    // The message as drawn: currentMessage() whole where it fits, else elided to the room left of the permanent
    // widgets (the busy indicator, the size grip).
    QString shownMessage() const;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QRect messageRect() const;
    void updateToolTip();
    void laterUpdateToolTip();
};

} // namespace ropescope::gui

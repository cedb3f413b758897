#pragma once
#include "session/explorer_state.h"

#include <QImage>
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSlider;

namespace ropescope::gui {

// The attention tab: an image and a question through a VLM under the explorer's current scheme; the
// answer, and the text->image attention of any layer and head as a heatmap over the image (Circle-RoPE
// sec. 5.6 recipe). Starts on the bundled mrope model and sample image. The model runs on demand; layer,
// head, colormap, opacity and contrast only repaint. (LibTorch stays in the .cpp.)
class AttentionPanel : public QWidget {
    Q_OBJECT
public:
    explicit AttentionPanel(QWidget* parent = nullptr);
    ~AttentionPanel() override;

    void setScheme(const session::ExplorerState& state); // used by the next run when "explorer's scheme" is on
    void useExplorerScheme(bool on);                      // off: the scheme the model was trained with
    bool run();                                          // false (and a message) on failure
    bool setModel(const QString& dir);
    bool setImage(const QString& path);
    void setQuestion(const QString& question);

    QString answer() const;
    QString status() const;
    QImage overlay() const { return overlay_; }
    int layers() const;

private:
    void repaintOverlay();
    struct Impl;
    std::unique_ptr<Impl> d;
    QImage overlay_;
    QLabel *imageLabel_, *answerLabel_, *statusLabel_, *modelLabel_;
    QLineEdit* question_;
    QCheckBox* explorerScheme_;
    QSlider *layer_, *opacity_;
    QComboBox *head_, *colormap_;
    QDoubleSpinBox *gamma_, *smoothing_;
};

} // namespace ropescope::gui

#pragma once
#include "session/explorer_state.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;

namespace ropescope::views {

// Every parameter of the explorer, live: scheme, layout (as text and as a structured editor), Circle-RoPE
// alpha/radius/text vector/stride, AGE schedule and layer, rotary frequencies, video time index, view
// options. Emits stateEdited() on every change with the state the controls describe.
class ParameterPanel : public QWidget {
    Q_OBJECT
public:
    explicit ParameterPanel(QWidget* parent = nullptr);

    void setState(const session::ExplorerState& state); // without emitting
    session::ExplorerState state() const;
    void setError(const QString& message); // empty clears
    void setLayerScheme(const QString& text); // "layer 3 of 36: mrope"

    QSlider* alphaSlider() const { return alpha_; }
    QComboBox* schemeBox() const { return scheme_; }
    QLineEdit* layoutEdit() const { return layout_; }

Q_SIGNALS:
    void stateEdited(const session::ExplorerState& state);
    void loadImageRequested();

private:
    void buildUi();
    void emitEdited();
    void structuredLayoutEdited();
    void updateEnabled();

    session::ExplorerState base_; // fields the panel does not edit (selection, camera, image)
    bool updating_ = false;

    QComboBox* scheme_;
    QLineEdit* layout_;
    QSpinBox *textBefore_, *rows_, *cols_, *images_, *frames_, *textBetween_, *textAfter_;
    QSlider* alpha_;
    QLabel* alphaValue_;
    QComboBox* radiusMode_;
    QDoubleSpinBox* radius_;
    QDoubleSpinBox* vector_[3];
    QDoubleSpinBox* stride_;
    QComboBox* age_;
    QLineEdit* agePattern_;
    QSpinBox* ageLayers_;
    QSlider* layer_;
    QLabel* layerLabel_;
    QLineEdit* theta_;
    QSpinBox* headDim_;
    QComboBox* allocation_;
    QLineEdit* sections_;
    QComboBox* temporal_;
    QDoubleSpinBox *secondPerGrid_, *tokensPerSecond_;
    QComboBox* colour_;
    QCheckBox *coneLines_, *coneSurface_, *labels_, *dark_;
    QComboBox* projection_;
    QLabel* imageLabel_;
    QLabel* error_;
};

} // namespace ropescope::views

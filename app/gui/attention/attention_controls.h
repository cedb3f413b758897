#pragma once
#include <QScrollArea>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QVBoxLayout;

namespace ropescope::gui {

// `text` with line-break opportunities (zero-width spaces) in long runs without a space: once a run is 12
// characters long, after each '/', ',', ':', ';', '=' or '_', and after 24 characters with none. A
// word-wrapped QLabel breaks only between words, and one long path or layout in the column's notes set the
// column's minimum width past its room (issue 56 item 2). The label reads the same; plainText strips them again.
QString wrappable(const QString& text);
QString plainText(const QString& shown);

// The Attention tab's side column: inputs (model, images, question, scheme choices) and the map's view
// settings, in a column that scrolls on its own. Like a Designer form's Ui class, it only builds and
// names the widgets (object names are what tests and sessions find); AttentionPanel wires them.
class AttentionControls : public QScrollArea {
    Q_OBJECT
public:
    explicit AttentionControls(QWidget* parent = nullptr);

    QSize sizeHint() const override; // the column's own width, whatever its notes hold

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void fitContentHeight();
    // The column's rows, top to bottom (the constructor's parts).
    void addInputRows(QVBoxLayout* column);
    void addAnswerRows(QVBoxLayout* column);
    void addMapRows(QVBoxLayout* column);

public:
    // layer steps through the model's attention layers (all of them but on Qwen3.5); layerNumber shows the
    // model's own number of the one shown.
    QLabel *layerNumber, *modelName, *errorNote, *questionNote, *modelInputs, *answer, *tokens, *priorFit, *status;
    QPushButton *openModel, *openImage, *addImage, *run;
    QLineEdit* question;
    QCheckBox *explorerScheme, *compare;
    QSlider *layer, *opacity;
    QComboBox *head, *mapType, *colormap;
    QDoubleSpinBox *gamma, *smoothing;
};

} // namespace ropescope::gui

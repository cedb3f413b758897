#pragma once
#include "core/session/explorer_state.h"
#include "views/widgets/custom_scheme_controls.h"

#include <QPointer>
#include <QWidget>

#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;
class QTimer;

namespace ropescope::views {

// Every parameter of the explorer, live: scheme, layout (as text and as a structured editor), Circle-RoPE
// alpha/radius/text vector/stride, AGE schedule and layer, rotary frequencies, video time index, view
// options. Emits stateEdited() on every change (the layout field once its text is complete: see
// commitLayout); applyTo() then writes what the controls describe into the window's state. The panel owns
// only those fields: selection, camera and image stay the window's.
class ParameterPanel : public QWidget {
    Q_OBJECT
public:
    explicit ParameterPanel(QWidget* parent = nullptr);

    void setState(const session::ExplorerState& state); // without emitting
    void applyTo(session::ExplorerState& state) const;
    // Shows `message` (empty clears) and marks the controls of `parameter`, a session key ("layout", "alpha").
    // A position table that does not fit the layout ("positions") marks the layout field: that is what the user
    // changed, and what the error asks them to change back.
    void setError(const QString& message, const QString& parameter = {});
    void setLayerScheme(const QString& text);     // "layer 3 of 36: mrope"
    void setEffectiveRadius(const QString& text); // "effective R 12.73" in the auto radius modes, else empty

    // The scheme list's entries after the built-ins: the scheme files used recently (newest first), then
    // "Python scheme..." and "Position table...". Choosing one emits schemeFileRequested; the window loads it.
    void setRecentSchemeFiles(const QStringList& paths);
    CustomSchemeControls* customControls() const { return custom_; }

    QSlider* alphaSlider() const { return alpha_; }
    QComboBox* schemeBox() const { return scheme_; }
    QLineEdit* layoutEdit() const { return layout_; }

Q_SIGNALS:
    void stateEdited();
    void loadImageRequested();
    // A scheme file chosen in the scheme list: its path, or empty to ask for one (kind "python" or "positions").
    void schemeFileRequested(const QString& path, const QString& kind);
    void layoutRejected(const QString& message); // the layout field's text does not parse; nothing applied

private:
    void buildUi();
    void emitEdited();
    // The layout field's tooltip (parameter_panel_layout.cpp adds a parse error to it).
    static constexpr const char* kLayoutHelp = "Segments, comma-separated: text:N (N text tokens), image:HxW (a merged token grid), "
                                               "video:TxHxW (T frames).\nApplied on Enter, when leaving the field, or after a pause.";
    void structuredLayoutEdited();
    void layoutTyped();
    void commitLayout();
    void mirrorInStructuredEditor(const geometry::Layout& layout);
    void updateEnabled();
    void listControls();                                        // fills controls_ from the hand-made controls, once built
    void buildTableControls(QFormLayout* form);                 // a control from its row for each parameter with none
    std::vector<QWidget*> controlsOf(const QString& key) const; // the widgets that set a session key

    void schemeChosen(int index);
    void followRotaryDefaults(); // a built-in chosen: its own theta, rotated fraction and pairing, where not set by hand
    void selectSchemeOf(const session::ExplorerState& state);

    static constexpr int kAlphaSteps = 1000; // alpha's slider runs 0..1000 for alpha 0..1
    bool updating_ = false;
    // The layout the state carries: typing changes only the field; the text is applied on Enter, on
    // leaving the field, or after a pause, and only when it parses.
    std::string committedLayout_;
    QTimer* layoutPause_;
    std::vector<QPointer<QWidget>> marked_; // controls setError marked, unmarked by the next call
    // The widgets of each scheme parameter (and the layout field), by key: error marks and enable rules use it.
    std::vector<std::pair<QString, std::vector<QWidget*>>> controls_;
    // Controls built from the parameter table for rows with no hand-made control (parameter_row_control.h).
    std::vector<std::pair<const char*, QWidget*>> tableControls_;

    QComboBox* scheme_;
    int builtinSchemes_ = 0; // the scheme list's first entries; files and the two "..." entries follow
    CustomSchemeControls* custom_;
    std::optional<geometry::CustomSchemeRef> shownCustom_; // the state's scheme file, as setState last showed it
    geometry::SchemeKind lastBuiltin_ = geometry::SchemeKind::Mrope;
    QLineEdit* layout_;
    QSpinBox *textBefore_, *rows_, *cols_, *images_, *frames_, *textBetween_, *textAfter_;
    QSlider* alpha_;
    QDoubleSpinBox* alphaBox_; // the same value as the slider, typed
    QLabel* effectiveRadius_;
    QLabel* layerNumber_;
    QLabel* legend_;
    QComboBox* radiusMode_;
    QDoubleSpinBox* radius_;
    QDoubleSpinBox* vector_[3];
    QDoubleSpinBox* stride_;
    QDoubleSpinBox* temporalStride_;   // VideoRoPE / HoPE delta; -1 shows "default"
    QDoubleSpinBox* visualStride_;     // V2PE
    QDoubleSpinBox* positionScale_[3]; // MM-RoPE (t, h, w)
    QDoubleSpinBox* ntkFactor_;        // VideoRoPE++
    QDoubleSpinBox* ntkAlpha_;         // XD-RoPE
    QCheckBox* newlineColumn_;         // XD-RoPE
    QComboBox* age_;
    QLineEdit* agePattern_;
    QSpinBox* ageLayers_;
    QSlider* layer_;
    QLabel* layerLabel_;
    QLineEdit* theta_;
    QSpinBox* headDim_;
    QDoubleSpinBox* partialRotary_; // partial_rotary_factor
    QCheckBox* proportional_;       // Gemma 4's full layers: frequencies over the whole head, the other pairs unturned
    QComboBox* pairing_;            // half or adjacent
    QSpinBox* kvHeads_;             // per-head allocation (MHRoPE)
    QComboBox* allocation_;
    QLineEdit* sections_;
    QComboBox* temporal_;
    QComboBox* videoForm_; // --video: the scheme's own, grid, split
    QDoubleSpinBox *secondPerGrid_, *tokensPerSecond_;
    QComboBox* colour_;
    QCheckBox *coneLines_, *coneSurface_, *labels_, *dark_;
    QComboBox* projection_;
    QLabel* imageLabel_;
    QLabel* error_;
};

} // namespace ropescope::views

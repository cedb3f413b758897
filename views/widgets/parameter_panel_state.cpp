// ParameterPanel's two-way mapping to the explorer state: what the controls say (applyTo) and showing a
// state in them (setState). The controls themselves are built in parameter_panel.cpp.
#include "views/widgets/parameter_panel.h"

#include "core/geometry/errors.h"
#include "core/geometry/layout.h"
#include "core/geometry/scheme_parameters.h"
#include "views/widgets/parameter_row_control.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <utility>

namespace ropescope::views {
using namespace geometry;

void ParameterPanel::applyTo(session::ExplorerState& s) const
{
    s.layout = committedLayout_;
    if (scheme_->currentIndex() < builtinSchemes_) {
        if (const auto kind = schemeFromName(scheme_->currentText().toStdString()))
            s.params.kind = *kind;
        s.params.custom.reset();
    } else if (s.params.custom) {
        custom_->applyTo(*s.params.custom);
    }
    CircleParams& c = s.params.circle;
    c.alpha = alpha_->value() / double(kAlphaSteps);
    c.radiusMode = static_cast<RadiusMode>(radiusMode_->currentIndex());
    c.radius = radius_->value();
    c.textVector = Eigen::Vector3d(vector_[0]->value(), vector_[1]->value(), vector_[2]->value());
    c.stride = stride_->value();
    const QString age = age_->currentText();
    s.age = age == "none" ? "" : age == "custom" ? agePattern_->text().trimmed().toStdString() : age.toStdString();
    s.ageLayers = ageLayers_->value();
    s.layer = std::min(layer_->value(), s.ageLayers - 1);
    s.params.rotary.theta = theta_->text().toDouble();
    s.params.rotary.headDim = headDim_->value();
    s.params.rotary.partial = partialRotary_->value();
    s.params.rotary.proportional = proportional_->isChecked();
    s.params.rotary.pairing = rotaryPairingFromName(pairing_->currentText().toStdString()).value_or(RotaryPairing::Half);
    s.params.allocationKind.reset();
    if (allocation_->currentIndex() > 0)
        s.params.allocationKind = allocationKindFromName(allocation_->currentText().toStdString());
    s.params.sections.clear();
    for (const QString& part : sections_->text().split(',', Qt::SkipEmptyParts))
        s.params.sections.push_back(part.trimmed().toInt());
    s.params.temporal.mode = temporal_->currentIndex() == 1 ? TemporalParams::Mode::Qwen25VL : TemporalParams::Mode::Qwen2VL;
    s.params.temporal.secondPerGrid = secondPerGrid_->value();
    s.params.temporal.tokensPerSecond = tokensPerSecond_->value();
    s.params.videoForm.reset();
    if (videoForm_->currentIndex() > 0)
        s.params.videoForm = videoForm_->currentIndex() == 1 ? VideoForm::Grid : VideoForm::Split;
    s.params.temporalStride.reset();
    if (temporalStride_->value() >= 0)
        s.params.temporalStride = temporalStride_->value();
    s.params.visualStride = visualStride_->value();
    s.params.positionScale = Eigen::Vector3d(positionScale_[0]->value(), positionScale_[1]->value(), positionScale_[2]->value());
    s.params.ntkFactor = ntkFactor_->value();
    for (const auto& [key, control] : tableControls_)
        applyRowControl(*findSchemeParameter(key), control, s.params);
    s.params.ntkAlpha = ntkAlpha_->value();
    s.params.newlineColumn = newlineColumn_->isChecked();
    s.params.rotary.heads = kvHeads_->value();
    // The combo lists the modes in enum order.
    s.colourMode = static_cast<session::ColourMode>(std::clamp(colour_->currentIndex(), 0, 2));
    s.showConeLines = coneLines_->isChecked();
    s.showConeSurface = coneSurface_->isChecked();
    s.showLabels = labels_->isChecked();
    s.darkBackground = dark_->isChecked();
    s.projection = session::projectionFromName(projection_->currentText().toStdString()).value_or(session::Projection{});
}

void ParameterPanel::setState(const session::ExplorerState& s)
{
    updating_ = true;
    shownCustom_ = s.params.custom;
    if (!s.params.custom)
        lastBuiltin_ = s.params.kind;
    selectSchemeOf(s);
    custom_->setScheme(s.params.custom);
    // Rewriting a line edit moves its cursor: only touch those whose text really changes.
    auto setText = [](QLineEdit* e, const QString& text) {
        if (e->text() != text)
            e->setText(text);
    };
    // A layout that differs from the one committed came from elsewhere (undo, reset, a session, the grid
    // editor): the field shows it even while it has the focus, and typing not yet applied is dropped. The same
    // layout leaves the field alone, so what the user is typing survives other edits.
    if (s.layout != committedLayout_) {
        layoutPause_->stop();
        setText(layout_, QString::fromStdString(s.layout));
        layout_->setStyleSheet({});
    } else if (!layoutPause_->isActive() && !layout_->hasFocus()) {
        setText(layout_, QString::fromStdString(s.layout));
    }
    committedLayout_ = s.layout;
    try {
        mirrorInStructuredEditor(parseLayout(s.layout));
    } catch (const InvalidInput&) { // only drawable states reach the panel; keep the editor as it is
    }
    alpha_->setValue(static_cast<int>(std::lround(s.params.circle.alpha * kAlphaSteps)));
    radiusMode_->setCurrentIndex(static_cast<int>(s.params.circle.radiusMode));
    radius_->setValue(s.params.circle.radius);
    for (int i = 0; i < 3; ++i)
        vector_[i]->setValue(s.params.circle.textVector[i]);
    stride_->setValue(s.params.circle.stride);
    const int ageIndex = age_->findText(QString::fromStdString(s.age));
    age_->setCurrentIndex(s.age.empty() ? 0 : ageIndex >= 0 ? ageIndex : age_->count() - 1);
    if (ageIndex < 0 && !s.age.empty())
        setText(agePattern_, QString::fromStdString(s.age));
    ageLayers_->setValue(s.ageLayers);
    layer_->setMaximum(s.ageLayers - 1);
    layer_->setValue(s.layer);
    if (theta_->text().toDouble() != s.params.rotary.theta)
        theta_->setText(QString::number(s.params.rotary.theta, 'g', 10));
    headDim_->setValue(s.params.rotary.headDim);
    partialRotary_->setValue(s.params.rotary.partial);
    proportional_->setChecked(s.params.rotary.proportional);
    pairing_->setCurrentText(rotaryPairingName(s.params.rotary.pairing));
    if (s.params.allocationKind)
        allocation_->setCurrentText(allocationKindName(*s.params.allocationKind));
    else
        allocation_->setCurrentIndex(0);
    QStringList sections;
    for (int v : s.params.sections)
        sections << QString::number(v);
    if (s.params.sections.empty() ? !sections_->text().trimmed().isEmpty() && !sections_->hasFocus() : true)
        setText(sections_, sections.join(','));
    temporal_->setCurrentIndex(s.params.temporal.mode == TemporalParams::Mode::Qwen25VL ? 1 : 0);
    secondPerGrid_->setValue(s.params.temporal.secondPerGrid);
    tokensPerSecond_->setValue(s.params.temporal.tokensPerSecond);
    temporalStride_->setValue(s.params.temporalStride.value_or(-1));
    videoForm_->setCurrentIndex(!s.params.videoForm ? 0 : *s.params.videoForm == VideoForm::Grid ? 1 : 2);
    visualStride_->setValue(s.params.visualStride);
    for (int i = 0; i < 3; ++i)
        positionScale_[i]->setValue(s.params.positionScale[i]);
    ntkFactor_->setValue(s.params.ntkFactor);
    for (const auto& [key, control] : tableControls_)
        showRowControl(*findSchemeParameter(key), control, s.params);
    ntkAlpha_->setValue(s.params.ntkAlpha);
    newlineColumn_->setChecked(s.params.newlineColumn);
    kvHeads_->setValue(s.params.rotary.heads);
    colour_->setCurrentIndex(static_cast<int>(s.colourMode));
    coneLines_->setChecked(s.showConeLines);
    coneSurface_->setChecked(s.showConeSurface);
    labels_->setChecked(s.showLabels);
    dark_->setChecked(s.darkBackground);
    const QString projection = QString::fromStdString(session::projectionName(s.projection));
    if (projection_->findText(projection) < 0) // a session's own order of components, e.g. 2,1,0
        projection_->addItem(projection);
    projection_->setCurrentText(projection);
    imageLabel_->setText(s.imagePath.isEmpty() ? "(none)" : QFileInfo(s.imagePath).fileName());
    // A value from elsewhere (undo, redo, a session) in the focused number box: all of it selected, as when the box
    // takes the focus, so typing replaces it. Its old selection covered part of the old text (issue 56 item 15).
    for (QAbstractSpinBox* box : findChildren<QAbstractSpinBox*>())
        if (box->hasFocus())
            box->selectAll();
    updateEnabled();
    updating_ = false;
}

} // namespace ropescope::views

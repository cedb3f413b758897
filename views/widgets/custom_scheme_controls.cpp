#include "views/widgets/custom_scheme_controls.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>

#include <cmath>

namespace ropescope::views {
namespace {

constexpr int kSliderSteps = 1000;

int sliderPosition(const geometry::CustomParameter& p, double value)
{
    return p.max > p.min ? static_cast<int>(std::lround((value - p.min) / (p.max - p.min) * kSliderSteps)) : 0;
}

} // namespace

CustomSchemeControls::CustomSchemeControls(QWidget* parent) : QGroupBox("Scheme file", parent)
{
    setObjectName("customScheme");
    auto* layout = new QVBoxLayout(this);
    file_ = new QLabel;
    file_->setObjectName("customSchemeFile");
    file_->setWordWrap(true);
    file_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(file_);
    importsFolder_ = new QCheckBox("Let it import the .py files beside it");
    importsFolder_->setObjectName("customSchemeImportsFolder");
    importsFolder_->setToolTip("Off: the scheme's folder is not on sys.path. On: the other .py files in its folder are read with it, "
                               "covered by its sha256 (a changed neighbour asks for trust again), and importable.");
    layout->addWidget(importsFolder_);
    connect(importsFolder_, &QCheckBox::toggled, this, [this](bool on) {
        if (!updating_)
            Q_EMIT importsFolderRequested(shownFile_, on);
    });
    parametersForm_ = new QFormLayout;
    layout->addLayout(parametersForm_);
    noParameters_ = new QLabel("No PARAMETERS: the file's positions take none.");
    noParameters_->setWordWrap(true);
    layout->addWidget(noParameters_);
    error_ = new QLabel;
    error_->setObjectName("customSchemeError");
    error_->setWordWrap(true);
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->setStyleSheet("color: #b3261e;");
    error_->hide();
    layout->addWidget(error_);
    hide();
}

void CustomSchemeControls::setScheme(const std::optional<geometry::CustomSchemeRef>& ref)
{
    setVisible(ref.has_value());
    if (!ref || !ref->scheme)
        return;
    updating_ = true;
    // The folder goes to the tooltip: a long path cannot wrap and would widen the whole panel.
    file_->setText(QString("%1: %2 components, sha256 %3...")
                       .arg(QString::fromStdString(ref->scheme->label()))
                       .arg(ref->scheme->components())
                       .arg(QString::fromStdString(ref->sha256.substr(0, 12))));
    file_->setToolTip(QString::fromStdString(ref->file));
    shownFile_ = QString::fromStdString(ref->file);
    importsFolder_->setVisible(shownFile_.endsWith(".py"));
    importsFolder_->setChecked(ref->importsFolder);
    const std::vector<geometry::CustomParameter> declared = ref->scheme->parameters();
    bool same = declared.size() == rows_.size();
    for (size_t i = 0; same && i < declared.size(); ++i)
        same = declared[i].name == rows_[i].parameter.name && declared[i].min == rows_[i].parameter.min &&
            declared[i].max == rows_[i].parameter.max;
    if (!same) {
        while (parametersForm_->rowCount() > 0)
            parametersForm_->removeRow(0);
        rows_.clear();
        for (const geometry::CustomParameter& p : declared) {
            auto* row = new QHBoxLayout;
            auto* slider = new QSlider(Qt::Horizontal);
            slider->setRange(0, kSliderSteps);
            slider->setObjectName(QString::fromStdString("param_" + p.name));
            auto* box = new QDoubleSpinBox;
            box->setObjectName(QString::fromStdString("paramBox_" + p.name));
            box->setRange(p.min, p.max);
            box->setDecimals(4);
            box->setSingleStep((p.max - p.min) / 100.0);
            box->setKeyboardTracking(false);
            row->addWidget(slider, 1);
            row->addWidget(box);
            parametersForm_->addRow(QString::fromStdString(p.name), row);
            rows_.push_back({p, slider, box});
            const size_t index = rows_.size() - 1;
            connect(slider, &QSlider::valueChanged, this, [this, index](int v) {
                if (updating_)
                    return;
                const Row& r = rows_[index];
                updating_ = true;
                r.box->setValue(r.parameter.min + (r.parameter.max - r.parameter.min) * v / kSliderSteps);
                updating_ = false;
                Q_EMIT edited();
            });
            connect(box, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this, index](double v) {
                if (updating_)
                    return;
                const Row& r = rows_[index];
                updating_ = true;
                r.slider->setValue(sliderPosition(r.parameter, v));
                updating_ = false;
                Q_EMIT edited();
            });
        }
    }
    const geometry::CustomValues values = ref->resolvedValues();
    for (const Row& r : rows_) {
        const auto it = values.find(r.parameter.name);
        const double v = it != values.end() ? it->second : r.parameter.defaultValue;
        r.box->setValue(v);
        r.slider->setValue(sliderPosition(r.parameter, v));
    }
    noParameters_->setVisible(rows_.empty());
    updating_ = false;
}

void CustomSchemeControls::applyTo(geometry::CustomSchemeRef& ref) const
{
    if (!ref.scheme)
        return;
    for (const geometry::CustomParameter& p : ref.scheme->parameters()) // rows of another file are not its values
        for (const Row& r : rows_)
            if (r.parameter.name == p.name)
                ref.values[p.name] = r.box->value();
}

void CustomSchemeControls::setFileError(const QString& detail)
{
    error_->setText(detail);
    error_->setVisible(!detail.isEmpty());
}

QString CustomSchemeControls::fileError() const
{
    return error_->isVisible() ? error_->text() : QString();
}

} // namespace ropescope::views

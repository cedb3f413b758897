#include "views/widgets/parameter_row_control.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSignalBlocker>

namespace ropescope::views {
using geometry::SchemeParameter;
using Type = SchemeParameter::Type;

namespace {

QDoubleSpinBox* numberBox(double min, double max, const QString& name, const char* help)
{
    auto* box = new QDoubleSpinBox;
    box->setRange(min, max);
    box->setDecimals(3);
    box->setSingleStep(max - min > 10 ? 1.0 : 0.05);
    box->setKeyboardTracking(false); // typing 250 applies 250, not 2 and 25 first
    box->setObjectName(name);
    box->setToolTip(QString::fromUtf8(help));
    return box;
}

QDoubleSpinBox* vectorBox(const QWidget* control, int i)
{
    return control->findChild<QDoubleSpinBox*>(control->objectName() + "_" + QString::number(i));
}

} // namespace

QWidget* makeRowControl(const SchemeParameter& row)
{
    const QString name = QString("param_") + row.key;
    QWidget* control = nullptr;
    switch (row.type) {
    case Type::Number: control = numberBox(row.min, row.max, name, row.help); break;
    case Type::Choice: {
        auto* combo = new QComboBox;
        for (int i = 0; row.choices[i]; ++i)
            combo->addItem(QString::fromUtf8(row.choices[i]));
        control = combo;
        break;
    }
    case Type::Flag: control = new QCheckBox; break;
    case Type::Vector: {
        control = new QWidget;
        auto* parts = new QHBoxLayout(control);
        parts->setContentsMargins(0, 0, 0, 0);
        for (int i = 0; i < 3; ++i)
            parts->addWidget(numberBox(row.min, row.max, name + "_" + QString::number(i), row.help));
        break;
    }
    }
    control->setObjectName(name);
    control->setToolTip(QString::fromUtf8(row.help));
    showRowControl(row, control, geometry::SchemeParams{});
    return control;
}

void applyRowControl(const SchemeParameter& row, const QWidget* control, geometry::SchemeParams& params)
{
    switch (row.type) {
    case Type::Number: row.set(params, static_cast<const QDoubleSpinBox*>(control)->value()); return;
    case Type::Choice: row.set(params, static_cast<const QComboBox*>(control)->currentIndex()); return;
    case Type::Flag: row.set(params, static_cast<const QCheckBox*>(control)->isChecked() ? 1 : 0); return;
    case Type::Vector:
        row.setVector(params, {vectorBox(control, 0)->value(), vectorBox(control, 1)->value(), vectorBox(control, 2)->value()});
        return;
    }
}

void showRowControl(const SchemeParameter& row, QWidget* control, const geometry::SchemeParams& params)
{
    switch (row.type) {
    case Type::Number: {
        auto* box = static_cast<QDoubleSpinBox*>(control);
        const QSignalBlocker block(box);
        box->setValue(row.get(params));
        return;
    }
    case Type::Choice: {
        auto* combo = static_cast<QComboBox*>(control);
        const QSignalBlocker block(combo);
        combo->setCurrentIndex(static_cast<int>(row.get(params)));
        return;
    }
    case Type::Flag: {
        auto* check = static_cast<QCheckBox*>(control);
        const QSignalBlocker block(check);
        check->setChecked(row.get(params) != 0);
        return;
    }
    case Type::Vector: {
        const std::array<double, 3> v = row.getVector(params);
        for (int i = 0; i < 3; ++i) {
            QDoubleSpinBox* box = vectorBox(control, i);
            const QSignalBlocker block(box);
            box->setValue(v[static_cast<size_t>(i)]);
        }
        return;
    }
    }
}

void onRowControlEdited(const SchemeParameter& row, QWidget* control, QObject* context, const std::function<void()>& edited)
{
    switch (row.type) {
    case Type::Number:
        QObject::connect(static_cast<QDoubleSpinBox*>(control), qOverload<double>(&QDoubleSpinBox::valueChanged), context, edited);
        return;
    case Type::Choice:
        QObject::connect(static_cast<QComboBox*>(control), qOverload<int>(&QComboBox::currentIndexChanged), context, edited);
        return;
    case Type::Flag: QObject::connect(static_cast<QCheckBox*>(control), &QCheckBox::toggled, context, edited); return;
    case Type::Vector:
        for (int i = 0; i < 3; ++i)
            QObject::connect(vectorBox(control, i), qOverload<double>(&QDoubleSpinBox::valueChanged), context, edited);
        return;
    }
}

} // namespace ropescope::views

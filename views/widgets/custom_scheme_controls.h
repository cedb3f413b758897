#pragma once
#include "core/geometry/custom_scheme.h"

#include <QGroupBox>

#include <vector>

class QCheckBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSlider;

namespace ropescope::views {

// The controls of a scheme from the user's files (a Python scheme or a position table): its file and hash,
// one slider and spin box per PARAMETERS entry, and the file's last error (the traceback's last lines, with
// file:line) while the last valid positions stay on screen. Hidden for the built-in schemes.
class CustomSchemeControls : public QGroupBox {
    Q_OBJECT
public:
    explicit CustomSchemeControls(QWidget* parent = nullptr);

    // Shows `ref` (none: hidden); rebuilds the parameter rows when the file declares other parameters.
    void setScheme(const std::optional<geometry::CustomSchemeRef>& ref);
    // Writes the values shown into `ref` (the parameters the file declares).
    void applyTo(geometry::CustomSchemeRef& ref) const;
    void setFileError(const QString& detail); // empty clears
    QString fileError() const;

Q_SIGNALS:
    void edited();
    // The user ticked or cleared "import the .py files beside it" (the window reloads the file that way).
    void importsFolderRequested(const QString& file, bool imports);

private:
    struct Row {
        geometry::CustomParameter parameter;
        QSlider* slider;
        QDoubleSpinBox* box;
    };
    QLabel* file_;
    QCheckBox* importsFolder_;
    QString shownFile_;
    QFormLayout* parametersForm_;
    QLabel* noParameters_;
    QLabel* error_;
    std::vector<Row> rows_;
    bool updating_ = false;
};

} // namespace ropescope::views

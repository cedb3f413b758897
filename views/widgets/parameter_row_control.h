#pragma once
// A control made from a scheme parameter's row alone (core/geometry/scheme_parameters.h), for a parameter the
// panel has no hand-made control for: a new parameter of any type is set, shown and enabled with no code here.
#include "core/geometry/scheme_parameters.h"

#include <functional>

class QObject;
class QWidget;

namespace ropescope::views {

// Number: a box with the row's range and default. Choice: a combo of its names. Flag: a check box. Vector: three
// boxes in a row. Its object name is "param_<key>" (a Vector's boxes "param_<key>_0".."_2"), its tooltip the
// row's help.
QWidget* makeRowControl(const geometry::SchemeParameter& row);
// What the control says, into the parameters; and the parameters' value shown in it (without emitting).
void applyRowControl(const geometry::SchemeParameter& row, const QWidget* control, geometry::SchemeParams& params);
void showRowControl(const geometry::SchemeParameter& row, QWidget* control, const geometry::SchemeParams& params);
// Calls `edited` (in `context`'s lifetime) when the user changes the control.
void onRowControlEdited(const geometry::SchemeParameter& row, QWidget* control, QObject* context, const std::function<void()>& edited);

} // namespace ropescope::views

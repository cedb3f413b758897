#pragma once
#include <QString>

class QWidget;

namespace ropescope::gui {

// File dialogs that open in the folder the user last chose a file in (remembered across launches). Save and
// export dialogs start in the folder the user last wrote into, else their documents, never one of RopeScope's
// own folders, with `suggestedName` there.
QString chooseOpenFile(QWidget* parent, const QString& title, const QString& filter);
QString chooseSaveFile(QWidget* parent, const QString& title, const QString& suggestedName, const QString& filter);
QString chooseFolder(QWidget* parent, const QString& title, const QString& start = {});
// A folder to export into, existing or new: the user types a name (a folder picker refuses one that does not
// exist yet, "Directory not found"), and a new one is created. Empty when cancelled or not creatable.
QString chooseExportFolder(QWidget* parent, const QString& title, const QString& suggestedName);

} // namespace ropescope::gui

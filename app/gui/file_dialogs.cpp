#include "app/gui/file_dialogs.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>

namespace ropescope::gui {
namespace {

const char kKey[] = "dialogs/lastFolder";

QString lastFolder()
{
    const QString folder = QSettings().value(kKey).toString();
    // The last folder a dialog used, else home (not the working directory: a launcher's is often / or the build tree).
    return !folder.isEmpty() && QFileInfo(folder).isDir() ? folder : QDir::homePath();
}

QString remember(const QString& chosen, bool isFolder)
{
    if (!chosen.isEmpty())
        QSettings().setValue(kKey, isFolder ? chosen : QFileInfo(chosen).absolutePath());
    return chosen;
}

} // namespace

QString chooseOpenFile(QWidget* parent, const QString& title, const QString& filter)
{
    return remember(QFileDialog::getOpenFileName(parent, title, lastFolder(), filter), false);
}

QString chooseSaveFile(QWidget* parent, const QString& title, const QString& suggestedName, const QString& filter)
{
    return remember(QFileDialog::getSaveFileName(parent, title, QDir(lastFolder()).filePath(suggestedName), filter), false);
}

QString chooseFolder(QWidget* parent, const QString& title, const QString& start)
{
    return remember(QFileDialog::getExistingDirectory(parent, title, start.isEmpty() ? lastFolder() : start), true);
}

QString chooseExportFolder(QWidget* parent, const QString& title, const QString& suggestedName)
{
    const QString path = QFileDialog::getSaveFileName(parent, title, QDir(lastFolder()).filePath(suggestedName), QString(), nullptr,
                                                      QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return {};
    if (!QFileInfo(path).isDir() && !QDir().mkpath(path)) {
        QMessageBox::warning(parent, title, path + ": cannot create this folder");
        return {};
    }
    return remember(path, true);
}

} // namespace ropescope::gui

#include "app/gui/file_dialogs.h"

#include "core/io/resource_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>

namespace ropescope::gui {
namespace {

const char kKey[] = "dialogs/lastFolder";
const char kExportKey[] = "dialogs/lastExportFolder"; // where the user last wrote something

// Inside RopeScope's own folders: the resources (bundled models, samples) or the executable's folder.
bool isApplicationFolder(const QString& folder)
{
    const QString path = QFileInfo(folder).canonicalFilePath();
    for (const QString& app : {io::resourceDir(), QCoreApplication::applicationDirPath()}) {
        const QString root = QFileInfo(app).canonicalFilePath();
        if (!root.isEmpty() && (path == root || path.startsWith(root + '/')))
            return true;
    }
    return false;
}

QString lastFolder()
{
    const QString folder = QSettings().value(kKey).toString();
    // The last folder a dialog used, else home (not the working directory: a launcher's is often / or the build tree).
    return !folder.isEmpty() && QFileInfo(folder).isDir() ? folder : QDir::homePath();
}

// Where a save or export starts: the user's last export folder, else their documents (else home). Never an
// application folder: opening the bundled model made its folder under resources/ the one offered for the Bias
// view's export (issue 56 item 7).
QString exportFolder()
{
    const QString folder = QSettings().value(kExportKey).toString();
    if (!folder.isEmpty() && QFileInfo(folder).isDir() && !isApplicationFolder(folder))
        return folder;
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    return !documents.isEmpty() && QFileInfo(documents).isDir() ? documents : QDir::homePath();
}

QString remember(const QString& chosen, bool isFolder, const char* key = kKey)
{
    if (!chosen.isEmpty())
        QSettings().setValue(key, isFolder ? chosen : QFileInfo(chosen).absolutePath());
    return chosen;
}

} // namespace

QString chooseOpenFile(QWidget* parent, const QString& title, const QString& filter)
{
    return remember(QFileDialog::getOpenFileName(parent, title, lastFolder(), filter), false);
}

QString chooseSaveFile(QWidget* parent, const QString& title, const QString& suggestedName, const QString& filter)
{
    return remember(QFileDialog::getSaveFileName(parent, title, QDir(exportFolder()).filePath(suggestedName), filter), false, kExportKey);
}

QString chooseFolder(QWidget* parent, const QString& title, const QString& start)
{
    return remember(QFileDialog::getExistingDirectory(parent, title, start.isEmpty() ? lastFolder() : start), true);
}

QString chooseExportFolder(QWidget* parent, const QString& title, const QString& suggestedName)
{
    const QString path = QFileDialog::getSaveFileName(parent, title, QDir(exportFolder()).filePath(suggestedName), QString(), nullptr,
                                                      QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return {};
    if (!QFileInfo(path).isDir() && !QDir().mkpath(path)) {
        QMessageBox::warning(parent, title, path + ": cannot create this folder");
        return {};
    }
    return remember(path, true, kExportKey);
}

} // namespace ropescope::gui

// MainWindow's sessions: the autosave restored at start and written after edits, session files opened and saved, and
// the undo stack's steps (every step a snapshot of the explorer and the Attention tab).
#include "app/gui/main_window.h"

#include "app/gui/attention_panel.h"
#include "app/gui/settings_undo.h"
#include "app/gui/window_words.h"
#include "core/io/atomic_file.h"
#include "views/widgets/parameter_panel.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUndoStack>

#include <utility>

namespace ropescope::gui {

QString MainWindow::autosavePath() const
{
    return autosave_.path();
}

bool MainWindow::restoreAutosave()
{
    session::Autosave::Restored restored = autosave_.restore();
    if (restored.session) {
        origin_.beginRestore();
        const SessionApplied applied = applySession(*restored.session);
        origin_.restoreCallReturned(applied == SessionApplied::Yes && runner_->busy()); // a large layout on the worker
        if (applied == SessionApplied::Yes)
            return true;
        if (applied == SessionApplied::SchemeFileNotRun) {
            // The session is fine; its scheme file was not run (missing, failing or not trusted). Keep the
            // file as it is, start on the defaults, and write nothing until the user changes something.
            const QString why = lastError_;
            origin_.beginFallback();
            applyState(session::ExplorerState{});
            origin_.fallbackApplied();
            showError(why + " (the session's other settings are kept in the autosave until you change something)");
            return true;
        }
        restored.problem = autosave_.setAside(lastError_);
    }
    applyState(session::ExplorerState{});
    if (!restored.problem.isEmpty())
        showError(restored.problem);
    return false;
}

bool MainWindow::openSession(const QString& path)
{
    try {
        return applySession(session::readSessionFile(path)) == SessionApplied::Yes; // else the window keeps its state
    } catch (const session::SessionFileError& e) {
        lastError_ = e.path + ": " + inWindowWords(e.parameter, e.detail);
        return false;
    }
}

MainWindow::SessionApplied MainWindow::applySession(const session::SessionFile& file)
{
    session::ExplorerState s = file.state;
    // A scheme file the session names: loaded only once trusted (SchemeFiles asks); otherwise nothing runs.
    if (QString error; !schemeFiles_->resolve(s.params, &error)) {
        lastError_ = error;
        return SessionApplied::SchemeFileNotRun;
    }
    if (!s.imagePath.isEmpty() && !image_.load(s.imagePath))
        s.imagePath.clear(); // a missing or unreadable image is not fatal
    if (!applyState(s))
        return SessionApplied::No;
    if (!file.attention.isEmpty())
        attention_->applySettings(file.attention);
    return SessionApplied::Yes;
}

session::SessionFile MainWindow::sessionFile() const
{
    return {state_, attention_->settings()}; // with the Attention tab's image, question and view settings
}

void MainWindow::saveSession(const QString& path)
{
    captureCamera();
    session::writeSessionFile(path, sessionFile());
}

void MainWindow::autosave()
{
    if (origin_.edited() != EditOrigin::Edit::Record)
        return; // the restored session's own settings arriving, or an edit saved once it is in
    recordEdit();
    if (autosave_.enabled())
        autosaveTimer_->start();
}

void MainWindow::recordEdit()
{
    if (origin_.undoing() || !undo_)
        return;
    const session::SessionFile now = sessionFile();
    if (recorded_.attention.isEmpty()) // the Attention tab had no settings yet (its model still loading): its first are the baseline
        recorded_.attention = now.attention;
    if (settingsKey(now) == settingsKey(recorded_))
        return; // a camera move, or the same settings again
    undo_->push(new SettingsCommand([this](const session::SessionFile& f) { applySnapshot(f); }, recorded_, now,
                                    std::exchange(nextEditName_, QString())));
    recorded_ = now;
}

void MainWindow::applySnapshot(const session::SessionFile& file)
{
    // A message about the step undone or redone (for one, "Show in 3-D replaced...") is stale now (issue 56 item 11).
    statusBar()->clearMessage();
    origin_.beginUndo();
    applyState(file.state);
    if (settingsKey({state_, file.attention}) != settingsKey(sessionFile()))
        attention_->applySettings(file.attention);
    origin_.undoApplied();
    recorded_ = file;
    if (autosave_.enabled() && origin_.mayAutosave())
        autosaveTimer_->start();
}

namespace {

QString shownTabFile(const QString& autosavePath)
{
    return QFileInfo(autosavePath).dir().filePath("window.json");
}

} // namespace

void MainWindow::restoreShownTab()
{
    QFile file(shownTabFile(autosave_.path()));
    if (!autosave_.enabled() || !file.open(QIODevice::ReadOnly))
        return;
    const int tab = QJsonDocument::fromJson(file.readAll()).object()["tab"].toInt(0);
    if (tab > 0 && tab < tabs_->count())
        tabs_->setCurrentIndex(tab);
}

void MainWindow::saveShownTab(int index) const
{
    if (!autosave_.enabled())
        return;
    try {
        io::writeFileAtomically(shownTabFile(autosave_.path()), QJsonDocument(QJsonObject{{"tab", index}}).toJson());
    } catch (const std::exception&) {
        // the tab is a convenience: the session itself is autosaved on its own
    }
}

void MainWindow::writeAutosave()
{
    autosaveTimer_->stop();
    if (!origin_.mayAutosave())
        return;
    try {
        autosave_.write(sessionFile());
    } catch (const io::IoError& e) {
        statusBar()->showMessage(QString("autosave failed: ") + e.what(), 8000);
    }
}

} // namespace ropescope::gui

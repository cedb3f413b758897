#pragma once
#include "core/geometry/scheme.h"
#include "core/user_schemes/python_scheme.h"

#include <QObject>
#include <QStringList>

#include <functional>
#include <optional>

class QFileSystemWatcher;
class QTimer;
class QWidget;

namespace ropescope::gui {

// The explorer's schemes from the user's files: Python schemes and position tables the user opens, the
// one on screen watched (saving it in an editor reloads it), the files used recently, and trust: a file a
// session names runs only once the user has trusted that exact content (asked once per content, remembered
// in QSettings). A file the user picks in a dialog or the recent list is named by the user: trusted, and
// reloaded without a question when it changes. A file that came from a session or an autosave asks again
// when its content changes on disk. The bytes whose hash is checked are the bytes that run (read once).
class SchemeFiles : public QObject {
    Q_OBJECT
public:
    explicit SchemeFiles(QWidget* window);

    struct Loaded {
        geometry::CustomSchemeRef ref;
        std::optional<geometry::Layout> layout; // a position table's own layout
    };
    // Loads a file the user named. On failure: nullopt, `error` one line, `detail` the traceback's last lines.
    // `importsFolder`: the .py files beside a Python scheme are read with it and importable (the user's choice).
    std::optional<Loaded> open(const QString& path, QString* error, QString* detail, bool importsFolder = false);
    // Loads the file a session or undo step names into `params` (asking for trust when needed); false with
    // `error` when it is missing, fails or is not trusted (its code is then not run).
    bool resolve(geometry::SchemeParams& params, QString* error);
    // The file on screen: watched from now on (none: stop watching).
    void show(const std::optional<geometry::CustomSchemeRef>& ref);

    QStringList recent() const;
    // Answers the trust question instead of a dialog (tests).
    using TrustPrompt = std::function<bool(const QString& path, const QString& sha256, bool changed)>;
    void setTrustPrompt(TrustPrompt prompt) { prompt_ = std::move(prompt); }
    // The prompt every new SchemeFiles starts with (tests: a window restoring its autosave asks at once).
    static void setDefaultTrustPrompt(TrustPrompt prompt);
    bool isTrusted(const QString& sha256) const;

Q_SIGNALS:
    void reloaded(const geometry::CustomSchemeRef& ref); // the watched file changed and loads
    void reloadFailed(const QString& error, const QString& detail);
    void recentChanged(const QStringList& paths);

private:
    std::optional<Loaded> load(const QString& path, const user_schemes::SchemeSource* source, QString* error, QString* detail);
    // Asks before running content that is not trusted yet; `changed`: it differs from what the session saved.
    bool allowed(const QString& path, const QString& sha256, bool changed);
    void remember(const QString& path);
    void trust(const QString& sha256);
    void fileChanged();
    void failReload(const QString& error, const QString& detail);

    QWidget* window_;
    QFileSystemWatcher* watcher_;
    QTimer* settle_; // an editor's save is several writes (or a rename): reload once they are done
    QString watched_;
    QByteArray watchedSha_;
    bool watchedImports_ = false;
    bool reloadFailed_ = false; // the watched file's last change did not load // read the watched scheme with its folder's .py files
    QStringList namedByUser_;   // files the user opened in this window (absolute paths): reloaded without asking
    TrustPrompt prompt_;
};

} // namespace ropescope::gui

#include "app/gui/scheme_files.h"

#include "core/geometry/errors.h"
#include "core/io/atomic_file.h"
#include "core/user_schemes/position_file.h"
#include "core/user_schemes/python_scheme.h"

#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QMessageBox>
#include <QSettings>
#include <QTimer>

namespace ropescope::gui {
namespace {

const char* const kRecentKey = "schemeFiles/recent";
const char* const kTrustedKey = "schemeFiles/trusted"; // sha256 of contents the user agreed to run
constexpr int kRecentCount = 8;

SchemeFiles::TrustPrompt& defaultPrompt()
{
    static SchemeFiles::TrustPrompt prompt;
    return prompt;
}

bool isPython(const QString& path)
{
    return user_schemes::isPythonSchemePath(path.toStdString());
}

} // namespace

SchemeFiles::SchemeFiles(QWidget* window)
    : QObject(window), window_(window), watcher_(new QFileSystemWatcher(this)), settle_(new QTimer(this))
{
    settle_->setSingleShot(true);
    settle_->setInterval(200);
    connect(watcher_, &QFileSystemWatcher::fileChanged, this, [this] { settle_->start(); });
    connect(settle_, &QTimer::timeout, this, &SchemeFiles::fileChanged);
    prompt_ = [this](const QString& path, const QString& sha, bool changed) {
        const QString text = QString("%1 names the Python scheme\n%2\nsha256 %3\n\nIts code runs with your permissions. Run it?\n"
                                     "(RopeScope remembers the answer for this exact content.)")
                                 .arg(changed ? "The file changed since the session was saved. The session" : "The session", path, sha);
        return QMessageBox::question(window_, "Run a Python scheme?", text, QMessageBox::Yes | QMessageBox::No, QMessageBox::No) ==
            QMessageBox::Yes;
    };
    if (defaultPrompt())
        prompt_ = defaultPrompt();
}

void SchemeFiles::setDefaultTrustPrompt(TrustPrompt prompt)
{
    defaultPrompt() = std::move(prompt);
}

std::optional<SchemeFiles::Loaded> SchemeFiles::open(const QString& path, QString* error, QString* detail, bool importsFolder)
{
    std::optional<user_schemes::SchemeSource> source;
    if (isPython(path)) {
        try {
            source = user_schemes::readSchemeSource(path.toStdString(), importsFolder);
        } catch (const io::IoError& e) {
            *error = *detail = e.what();
            return std::nullopt;
        }
    }
    std::optional<Loaded> loaded = load(path, source ? &*source : nullptr, error, detail);
    if (loaded) {
        if (isPython(path))
            trust(QString::fromStdString(loaded->ref.sha256)); // named by the user
        const QString absolute = QFileInfo(path).absoluteFilePath();
        if (!namedByUser_.contains(absolute))
            namedByUser_.append(absolute);
    }
    return loaded;
}

// Loads a file: a Python scheme from `source` when given (bytes already read and trusted), else read here.
std::optional<SchemeFiles::Loaded> SchemeFiles::load(const QString& path, const user_schemes::SchemeSource* source, QString* error,
                                                     QString* detail)
{
    try {
        Loaded out;
        if (isPython(path)) {
            out.ref = user_schemes::pythonSchemeRef(source ? user_schemes::loadPythonScheme(*source)
                                                           : user_schemes::loadPythonScheme(path.toStdString()));
        } else {
            const user_schemes::PositionFile file = user_schemes::readPositionFile(path.toStdString());
            out.ref = user_schemes::positionFileRef(file);
            out.layout = file.layout;
        }
        remember(path);
        return out;
    } catch (const user_schemes::PythonError& e) {
        *error = QString::fromStdString(e.reason());
        *detail = QString::fromStdString(e.detail());
    } catch (const geometry::InvalidInput& e) {
        *error = *detail = QString::fromStdString(e.reason());
    } catch (const io::IoError& e) {
        *error = *detail = e.what();
    }
    return std::nullopt;
}

bool SchemeFiles::allowed(const QString& path, const QString& sha256, bool changed)
{
    if (isTrusted(sha256))
        return true;
    if (!prompt_(path, sha256, changed))
        return false;
    trust(sha256);
    return true;
}

bool SchemeFiles::resolve(geometry::SchemeParams& params, QString* error)
{
    if (!params.custom || params.custom->scheme)
        return true;
    geometry::CustomSchemeRef& ref = *params.custom;
    const QString path = QString::fromStdString(ref.file);
    if (!QFileInfo(path).isFile()) {
        *error = path + ": the scheme file the session names is not there";
        return false;
    }
    std::optional<user_schemes::SchemeSource> source;
    if (isPython(path)) {
        try {
            source = user_schemes::readSchemeSource(ref.file, ref.importsFolder); // read once: these bytes are checked and run
        } catch (const io::IoError& e) {
            *error = e.what();
            return false;
        }
        const QString sha = QString::fromStdString(source->sha256);
        if (!allowed(path, sha, source->sha256 != ref.sha256)) {
            *error = QFileInfo(path).fileName() + " was not run: it is not trusted (sha256 " + sha.left(12) + "...)";
            return false;
        }
    }
    QString detail;
    const std::optional<Loaded> loaded = load(path, source ? &*source : nullptr, error, &detail);
    if (!loaded)
        return false;
    const geometry::CustomValues values = ref.values;
    ref = loaded->ref;
    for (const geometry::CustomParameter& p : ref.scheme->parameters()) // the session's values the file still declares
        if (const auto it = values.find(p.name); it != values.end())
            ref.values[p.name] = it->second;
    return true;
}

void SchemeFiles::show(const std::optional<geometry::CustomSchemeRef>& ref)
{
    const QString path = ref ? QString::fromStdString(ref->file) : QString();
    if (path == watched_) {
        watchedImports_ = ref && ref->importsFolder;
        return;
    }
    if (!watched_.isEmpty())
        watcher_->removePath(watched_);
    watched_ = path;
    watchedSha_ = ref ? QByteArray::fromStdString(ref->sha256) : QByteArray();
    watchedImports_ = ref && ref->importsFolder;
    if (!path.isEmpty())
        watcher_->addPath(path);
}

void SchemeFiles::failReload(const QString& error, const QString& detail)
{
    reloadFailed_ = true;
    Q_EMIT reloadFailed(error, detail);
}

void SchemeFiles::fileChanged()
{
    if (watched_.isEmpty())
        return;
    // Editors that save by writing a new file and renaming it end the watch on the old one: watch again.
    if (!watcher_->files().contains(watched_) && QFileInfo(watched_).isFile())
        watcher_->addPath(watched_);
    if (!QFileInfo(watched_).isFile())
        return; // mid-save (removed before the rename): the next change reloads it
    QString error, detail;
    std::optional<Loaded> loaded;
    if (isPython(watched_)) {
        std::optional<user_schemes::SchemeSource> source;
        try {
            source = user_schemes::readSchemeSource(watched_.toStdString(), watchedImports_);
        } catch (const io::IoError& e) {
            failReload(e.what(), e.what());
            return;
        }
        if (QByteArray::fromStdString(source->sha256) == watchedSha_ && !reloadFailed_)
            return; // touched, not changed (after a failed reload the same content must load again: the error goes)
        // A file this window's user opened reloads as they save it; one a session or autosave named asks
        // again before its new content runs.
        const QString sha = QString::fromStdString(source->sha256);
        if (namedByUser_.contains(QFileInfo(watched_).absoluteFilePath()))
            trust(sha);
        else if (!allowed(watched_, sha, true)) {
            watchedSha_ = QByteArray::fromStdString(source->sha256); // asked once for this content
            error = QFileInfo(watched_).fileName() + " changed on disk and was not run: the new content is not trusted (sha256 " +
                sha.left(12) + "...)";
            failReload(error, error);
            return;
        }
        loaded = load(watched_, &*source, &error, &detail);
    } else {
        loaded = load(watched_, nullptr, &error, &detail);
    }
    if (!loaded) {
        failReload(error, detail);
        return;
    }
    if (QByteArray::fromStdString(loaded->ref.sha256) == watchedSha_ && !reloadFailed_)
        return; // touched, not changed
    watchedSha_ = QByteArray::fromStdString(loaded->ref.sha256);
    reloadFailed_ = false;
    Q_EMIT reloaded(loaded->ref);
}

QStringList SchemeFiles::recent() const
{
    return QSettings().value(kRecentKey).toStringList();
}

bool SchemeFiles::isTrusted(const QString& sha256) const
{
    return QSettings().value(kTrustedKey).toStringList().contains(sha256);
}

void SchemeFiles::remember(const QString& path)
{
    QStringList paths = recent();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    paths.removeAll(absolute);
    paths.prepend(absolute);
    while (paths.size() > kRecentCount)
        paths.removeLast();
    QSettings().setValue(kRecentKey, paths);
    Q_EMIT recentChanged(paths);
}

void SchemeFiles::trust(const QString& sha256)
{
    QStringList trusted = QSettings().value(kTrustedKey).toStringList();
    if (!trusted.contains(sha256)) {
        trusted.append(sha256);
        QSettings().setValue(kTrustedKey, trusted);
    }
}

} // namespace ropescope::gui

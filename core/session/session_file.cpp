#include "core/session/session_file.h"

#include "core/geometry/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>

#include <cstdio>

namespace ropescope::session {

SessionFileError::SessionFileError(const QString& p, const std::string& d, const std::string& param)
    : std::runtime_error(p.toStdString() + ": " + (param.empty() ? d : param + ": " + d)), path(p), detail(d), parameter(param)
{ }

SessionFile readSessionFile(const QString& path)
{
    QByteArray bytes;
    try {
        bytes = io::readInputFile(path, 16 << 20, "session file");
    } catch (const io::IoError& e) {
        // readInputFile's message already names the file.
        const std::string what = e.what(), prefix = QFile::encodeName(path).toStdString() + ": ";
        throw SessionFileError(path, what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &parseError);
    if (doc.isNull() || !doc.isObject())
        throw SessionFileError(
            path, "not a session file: " + (doc.isNull() ? parseError.errorString().toStdString() : std::string("expected a JSON object")));
    SessionFile s;
    try {
        s.state = ExplorerState::fromJson(doc.object());
    } catch (const geometry::InvalidInput& e) {
        throw SessionFileError(path, e.reason(), e.parameter());
    }
    if (!s.state.imagePath.isEmpty() && !QFileInfo(s.state.imagePath).isFile())
        s.state.imagePath.clear();
    if (doc.object()["attention"].isObject())
        s.attention = doc.object()["attention"].toObject();
    return s;
}

QByteArray sessionFileJson(const SessionFile& session)
{
    QJsonObject o = session.state.toJson();
    o["attention"] = session.attention;
    return QJsonDocument(o).toJson();
}

void writeSessionFile(const QString& path, const SessionFile& session)
{
    io::writeFileAtomically(path, sessionFileJson(session));
}

Autosave::Autosave(QString dir) : dir_(std::move(dir)) { }

QString Autosave::path() const
{
    return QDir(dir_).filePath("autosave.ropescope.json");
}

Autosave::Restored Autosave::restore()
{
    Restored r;
    if (!QFileInfo::exists(path()) && !QFileInfo(path()).isSymLink())
        return r;
    try {
        r.session = readSessionFile(path());
        return r;
    } catch (const SessionFileError& e) {
        r.problem = setAside(QString::fromStdString(e.what()));
        return r;
    }
}

QString Autosave::setAside(const QString& why)
{
    // A name that is taken (two failures within a second) gets a counter, never replaces the earlier one.
    const QString stem = path() + ".corrupt-" + QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss");
    QString aside = stem;
    for (int n = 2; QFileInfo::exists(aside) || QFileInfo(aside).isSymLink(); ++n)
        aside = stem + "-" + QString::number(n);
    // rename(2) moves the entry itself (a symlink stays a symlink) and never follows it.
    const bool kept = ::rename(QFile::encodeName(path()).constData(), QFile::encodeName(aside).constData()) == 0;
    enabled_ = kept;
    return why +
        (kept ? " (kept as " + QFileInfo(aside).fileName() + "; starting from defaults)"
              : " (could not be set aside; starting from defaults, autosave is off)");
}

void Autosave::write(const SessionFile& session) const
{
    if (!enabled_)
        return;
    if (!QDir().mkpath(dir_))
        throw io::IoError(dir_.toStdString() + ": cannot create the session folder");
    writeSessionFile(path(), session);
}

} // namespace ropescope::session

#include "app/gui/settings_undo.h"

#include "app/gui/window_words.h"

#include <QJsonDocument>
#include <QStringList>

namespace ropescope::gui {
namespace {

constexpr qint64 kMergeWindowMs = 1000;

QJsonObject withoutCamera(const session::SessionFile& file)
{
    session::SessionFile f = file;
    f.state.cameraState.reset();
    return QJsonDocument::fromJson(session::sessionFileJson(f)).object();
}

} // namespace

QByteArray settingsKey(const session::SessionFile& file)
{
    return QJsonDocument(withoutCamera(file)).toJson(QJsonDocument::Compact);
}

QString describeChange(const session::SessionFile& before, const session::SessionFile& after)
{
    const QJsonObject a = withoutCamera(before), b = withoutCamera(after);
    QStringList changed;
    QStringList keys = a.keys() + b.keys();
    keys.removeDuplicates();
    keys.sort();
    for (const QString& key : keys) {
        if (a[key] == b[key])
            continue;
        if (a[key].isObject() && b[key].isObject()) {
            const QJsonObject x = a[key].toObject(), y = b[key].toObject();
            QStringList inner = x.keys() + y.keys();
            inner.removeDuplicates();
            inner.sort();
            for (const QString& k : inner)
                if (x[k] != y[k])
                    changed << settingWord(key) + " " + settingWord(k);
        } else {
            changed << settingWord(key);
        }
    }
    if (changed.isEmpty())
        return "Change settings";
    return "Change " + (changed.size() > 3 ? changed.mid(0, 3).join(", ") + ", ..." : changed.join(", "));
}

SettingsCommand::SettingsCommand(Apply apply, session::SessionFile before, session::SessionFile after, const QString& text)
    : apply_(std::move(apply)), before_(std::move(before)), after_(std::move(after))
{
    setText(text.isEmpty() ? describeChange(before_, after_) : text);
    sinceLast_.start();
}

void SettingsCommand::undo()
{
    apply_(before_);
    done_ = false;
}

void SettingsCommand::redo()
{
    if (!done_)
        apply_(after_);
    done_ = true;
}

bool SettingsCommand::mergeWith(const QUndoCommand* other)
{
    const auto* next = static_cast<const SettingsCommand*>(other);
    if (next->text() != text() || sinceLast_.elapsed() > kMergeWindowMs || text().startsWith("Show"))
        return false;
    after_ = next->after_;
    sinceLast_.restart();
    return true;
}

} // namespace ropescope::gui

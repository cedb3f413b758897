// libFuzzer target: arbitrary bytes as an explorer session file (what File > Open session and the
// autosave restore read).
#include "core/geometry/errors.h"
#include "core/session/explorer_state.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)));
    if (!doc.isObject())
        return 0;
    try {
        ropescope::session::ExplorerState::fromJson(doc.object());
    } catch (const ropescope::geometry::InvalidInput&) { }
    return 0;
}

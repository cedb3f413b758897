// libFuzzer target: arbitrary bytes as a `bias --merge` shard (bias_state.json), read and merged with itself
// and with a second reading, as the merge does with two shards.
#include "core/model/analysis/bias_state.h"

#include <QJsonDocument>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)));
    if (!doc.isObject())
        return 0;
    try {
        ropescope::model::BiasAccumulation a = ropescope::model::BiasAccumulation::fromJson(doc.object(), "fuzz");
        const ropescope::model::BiasAccumulation b = ropescope::model::BiasAccumulation::fromJson(a.toJson(), "fuzz again");
        a.merge(b); // the same samples twice: refused, never out of bounds
    } catch (const ropescope::model::ModelError&) { }
    return 0;
}

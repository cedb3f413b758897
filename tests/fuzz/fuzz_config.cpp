// libFuzzer target: arbitrary bytes as a model config.json.
#include "core/model/engine/model_config.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        ropescope::model::parseModelConfig(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), "fuzz");
    } catch (const ropescope::model::ModelError&) { }
    return 0;
}

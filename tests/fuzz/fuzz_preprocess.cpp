// libFuzzer target: arbitrary bytes as a model folder's preprocessor_config.json, under both processor
// families' defaults (Qwen2-VL's and Qwen3-VL's).
#include "core/model/engine/preprocess_config.h"
#include "core/model/engine/safetensors.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    for (const auto architecture : {ropescope::model::Architecture::Qwen2VL, ropescope::model::Architecture::Qwen3VL}) {
        ropescope::model::ModelConfig config;
        config.architecture = architecture;
        try {
            const auto o = ropescope::model::parsePreprocessConfig(bytes, "fuzz", config);
            // What the parser promises: bounded, ordered pixel counts and positive deviations.
            if (o.minPixels < 1 || o.minPixels > o.maxPixels || o.maxPixels > 1280LL * 32 * 32)
                __builtin_trap();
            for (float s : o.stdev)
                if (!(s > 0))
                    __builtin_trap();
        } catch (const ropescope::model::ModelError&) { }
    }
    return 0;
}

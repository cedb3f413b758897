// libFuzzer target: arbitrary bytes as a safetensors file. Every tensor a parse accepts is read in full,
// so AddressSanitizer catches any out-of-bounds offset the validation let through.
#include "core/model/engine/safetensors.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        const auto st =
            ropescope::model::SafeTensors::fromBytes(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)));
        volatile uint8_t sink = 0;
        for (const auto& t : st.tensors()) {
            const uint8_t* p = st.data(t);
            for (uint64_t i = 0; i < t.end - t.begin; ++i)
                sink = static_cast<uint8_t>(sink ^ p[i]);
        }
    } catch (const ropescope::model::ModelError&) { }
    return 0;
}

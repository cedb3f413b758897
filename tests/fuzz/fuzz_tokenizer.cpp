// libFuzzer target: arbitrary bytes as tokenizer.json; accepted tokenizers encode and decode a fixed text.
#include "core/model/engine/tokenizer.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        const auto tok =
            ropescope::model::Tokenizer::fromJson(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), "fuzz");
        const auto ids = tok.encode(QStringLiteral("Hello, world! 你好 <|im_start|> 123  \n\t x"));
        tok.decode(ids);
        tok.decode({-5, 0, 1, 1 << 30});
    } catch (const ropescope::model::ModelError&) { }
    return 0;
}

// libFuzzer target: arbitrary bytes as an `eval --questions` file (questions.jsonl).
#include "core/model/engine/safetensors.h"
#include "core/model/training/question_set.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        ropescope::model::parseQuestionSet(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), "fuzz", "/tmp");
    } catch (const ropescope::model::ModelError&) { }
    return 0;
}

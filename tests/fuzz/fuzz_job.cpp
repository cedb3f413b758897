// libFuzzer target: arbitrary bytes as a batch job file.
#include "app/batch/batch_job.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        ropescope::batch::parseJob(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), "fuzz");
    } catch (const ropescope::batch::JobError&) { }
    return 0;
}

#include "core/model/engine/host_allocator.h"

#include "core/model/engine/safetensors.h"

#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ropescope::model {

void reuseLargeHostAllocations()
{
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        // mmap's threshold cannot go above 32 MB, and 2B-scale activations are larger: no direct mmaps at
        // all, and a high trim threshold so the top of the heap is not handed back after every layer.
        mallopt(M_MMAP_MAX, 0);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    });
#endif
}

void releaseFreeHostMemory()
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

double physicalMemoryBytes()
{
    const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES)), size = static_cast<double>(::sysconf(_SC_PAGE_SIZE));
    return pages > 0 && size > 0 ? pages * size : 0.0;
}

double availableMemoryBytes()
{
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    double kb = 0;
    while (meminfo >> key >> kb >> unit)
        if (key == "MemAvailable:")
            return kb * 1024;
    return 0;
}

void refuseOverHalfTheMemory(double bytes, const std::string& what, const std::string& advice)
{
    const double memory = physicalMemoryBytes();
    if (memory <= 0 || bytes <= memory / 2)
        return;
    char amounts[160];
    std::snprintf(amounts, sizeof amounts, " needs about %.1f GB, more than half of this machine's %.1f GB: ", bytes / 1e9, memory / 1e9);
    throw ModelError(what + amounts + advice);
}

} // namespace ropescope::model

#include "core/model/engine/cpu_threads.h"

#include <ATen/Parallel.h>

#include <mutex>

#include <dlfcn.h>

namespace ropescope::model {

void balanceCpuThreads()
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (at::get_num_threads() <= 1)
            return;
        // Looked up at run time: the BLAS behind libblas.so.3 is a Debian alternative, OpenBLAS or not.
        using SetThreads = void (*)(int);
        if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
            set(1);
    });
}

} // namespace ropescope::model

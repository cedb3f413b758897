#include "core/model/engine/blas_kernels.h"

#include <cstdlib>
#include <strings.h>

#include <dlfcn.h>

namespace ropescope::model {
namespace {

// Looked up at run time, as in cpu_threads.cpp: libblas.so.3 is a Debian alternative, OpenBLAS or not.
using CoreName = char* (*)();
using DynamicStep = void (*)();

std::string openblasCore()
{
    const auto name = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    const char* core = name ? name() : nullptr;
    return core ? core : "";
}

// The kernels OpenBLAS 0.3.21 has for the widest vectors this CPU runs (GCC's checks include the operating
// system's support for the registers), or none.
const char* widestKernels()
{
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    return nullptr;
}

BlasKernels chooseKernels()
{
    BlasKernels k{openblasCore(), {}};
    // Prescott is OpenBLAS's fallback for a CPU it does not know; a CPU with AVX2 is never one.
    if (k.core.empty() || std::getenv("OPENBLAS_CORETYPE") || strcasecmp(k.core.c_str(), "Prescott") != 0)
        return k;
#if defined(__x86_64__) && defined(__GNUC__)
    const char* wanted = widestKernels();
    const auto quit = reinterpret_cast<DynamicStep>(::dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
    const auto init = reinterpret_cast<DynamicStep>(::dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
    if (!wanted || !quit || !init)
        return k;
    // OpenBLAS's own choice again, with the kernels named: its dynamic_init reads OPENBLAS_CORETYPE. Left set, so
    // that processes started from here (a scheme worker, another ropescope) choose the same.
    ::setenv("OPENBLAS_CORETYPE", wanted, 0);
    quit();
    init();
    k.replaced = k.core;
    k.core = openblasCore();
#endif
    return k;
}

// Before main(): no thread of this process runs yet, so no BLAS call is under way while the kernels change.
const BlasKernels chosen = chooseKernels();

} // namespace

const BlasKernels& blasKernels()
{
    return chosen;
}

} // namespace ropescope::model

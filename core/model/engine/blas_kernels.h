#pragma once

#include <string>

namespace ropescope::model {

// The kernels OpenBLAS runs in this process. Debian 12's OpenBLAS (0.3.21) does not know the CPUs made after it
// (Intel's Sapphire and Emerald Rapids among them) and falls back to its Prescott kernels, SSE3 from 2004, several
// times slower than its SkylakeX (AVX-512) ones (docs/SPEED.md, "bench model at each shipped config"). RopeScope then chooses the widest kernels this CPU runs, before main()
// (no thread runs, no BLAS call has been made). An OPENBLAS_CORETYPE the user set is left as it is.
struct BlasKernels {
    std::string core;     // OpenBLAS's name for the kernels in use ("SkylakeX"), or empty: the BLAS is not OpenBLAS
    std::string replaced; // the kernels OpenBLAS had chosen itself, where RopeScope replaced them ("Prescott")
};

const BlasKernels& blasKernels();

} // namespace ropescope::model

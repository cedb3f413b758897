#pragma once

namespace ropescope::model {

// One level of CPU threads, not two. LibTorch's own intra-op pool and a threaded BLAS (OpenBLAS's pthread
// build) both start one thread per core; when both are above one, every GEMM inside a parallel region
// oversubscribes the cores and the threads spin against each other. Measured with Debian 13's LibTorch 2.6
// and libopenblas0-pthread on 2 cores (bench model, 1002 tokens): decoder 633 ms with 2 + 2 threads, 31 ms
// with 2 + 1. Debian 12's LibTorch 1.13 starts one intra-op thread, and there BLAS keeps every core.
// So: when LibTorch runs more than one thread, OpenBLAS (if it is the BLAS in use) is set to one. Idempotent.
void balanceCpuThreads();

} // namespace ropescope::model

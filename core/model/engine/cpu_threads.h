#pragma once

#include <cstdint>
#include <functional>

namespace ropescope::model {

// One level of CPU threads, not two. LibTorch's own intra-op pool and a threaded BLAS (OpenBLAS's pthread
// build) both start one thread per core; when both are above one, every GEMM inside a parallel region
// oversubscribes the cores and the threads spin against each other (docs/SPEED.md, "Engine choices measured on
// the CPU"). Debian 12's LibTorch 1.13 starts one intra-op thread, and there BLAS keeps every core.
// The cores go to BLAS: a model's prefill is mostly GEMMs, and LibTorch does not split one GEMM over its threads
// (LibTorch 2.6 at 2 + 1 ran Gemma 4 31B's 3-layer prefill in 29.8 s, at 1 + 2 in 17.6 s). So when both pools
// start more than one thread, LibTorch's is set to one; where the user set OMP_NUM_THREADS (which OpenBLAS reads
// too), that count stays LibTorch's and OpenBLAS is set to one. Idempotent.
void balanceCpuThreads();

// How many calls forEachAcrossCores runs at once: as many as either pool starts threads (Debian 12's LibTorch
// runs one intra-op thread and leaves the cores to OpenBLAS; so does LibTorch 2.x after balanceCpuThreads).
int64_t cpuWorkers();

// Runs work(i) for every i in [0, count), spread over the cores: each call on one core, with BLAS single-threaded
// while they run and the caller's thread-local state (grad and inference mode) in force in every worker, so
// autograd records as it would on the caller's thread. For many small independent GEMMs, such as a MoE block's
// experts, where one GEMM at a time cannot keep the cores busy: one GEMM pair per core beat OpenBLAS splitting
// each GEMM over the cores (docs/SPEED.md, "Engine choices measured on the CPU").
// The calls run on one pool of threads for the whole process (cpuWorkers() of them, started at the first call and
// kept), which the caller waits for; callers on several threads take turns. A worker's own LibTorch operations
// run on the worker alone (its OpenMP team is one thread), not on a team of every core per worker.
// Calls must not depend on each other's order. Called from inside a worker, it runs serially. The first exception
// a call throws is rethrown here, after every worker has stopped.
void forEachAcrossCores(int64_t count, const std::function<void(int64_t)>& work);

} // namespace ropescope::model

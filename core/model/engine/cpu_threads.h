#pragma once

#include <cstdint>
#include <functional>

namespace ropescope::model {

// One level of CPU threads at a time, not two. LibTorch's own intra-op pool and a threaded BLAS (OpenBLAS's
// pthread build) both start one thread per core; when both run more than one, every GEMM inside a parallel region
// oversubscribes the cores and the threads spin against each other (docs/SPEED.md, "Engine choices measured on
// the CPU"). So when OpenBLAS starts more than one thread, balanceCpuThreads gives LibTorch's pool the cores (Debian
// 12's LibTorch 1.13 starts it at one; where the user set OMP_NUM_THREADS that count stays) and sets OpenBLAS to one
// thread, and BlasOnAllCores hands OpenBLAS its cores back for one large GEMM at a time: element-wise work and the
// fused attention's blocks run on LibTorch's pool, a projection's GEMM on OpenBLAS's. LibTorch does not split one
// GEMM over its threads: with every GEMM on one core Gemma 4 31B's 3-layer prefill took 29.8 s, with the cores
// to OpenBLAS throughout 17.6 s, and the tiny Qwen2-VL's decoder ran 30% slower (docs/SPEED.md). Idempotent.
void balanceCpuThreads();

// While one lives (and `wanted`), OpenBLAS runs its GEMMs on the cores it started with; otherwise on one thread
// (after balanceCpuThreads). For GEMMs made outside LibTorch's parallel regions and outside forEachAcrossCores'
// workers (in either it does nothing: the cores are busy already). Scopes on several threads share one raise.
class BlasOnAllCores {
public:
    explicit BlasOnAllCores(bool wanted = true);
    ~BlasOnAllCores();
    BlasOnAllCores(const BlasOnAllCores&) = delete;
    BlasOnAllCores& operator=(const BlasOnAllCores&) = delete;

private:
    bool raised_ = false;
};

// The threads a large GEMM runs on (BlasOnAllCores): OpenBLAS's count before balanceCpuThreads, else its current
// one (1 without OpenBLAS).
int64_t largeGemmThreads();

// How many calls forEachAcrossCores runs at once: as many as either pool starts threads (after balanceCpuThreads,
// LibTorch's pool has the cores).
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

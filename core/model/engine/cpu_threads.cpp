#include "core/model/engine/cpu_threads.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <dlfcn.h>

namespace ropescope::model {
namespace {

// Looked up at run time: the BLAS behind libblas.so.3 is a Debian alternative, OpenBLAS or not; the OpenMP
// runtime is LibTorch's, where its build has one.
using SetThreads = void (*)(int);
using GetThreads = int (*)();

SetThreads openblasSetThreads()
{
    static const auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    return set;
}

int openblasThreads()
{
    static const auto get = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    return get && openblasSetThreads() ? get() : 1;
}

// True on the pool's threads: a call of forEachAcrossCores from one of them runs serially there.
thread_local bool insideWorkers = false;

// The threads OpenBLAS started with, once balanceCpuThreads has set it to one (else 0): what BlasOnAllCores gives
// back. The raises in force (BlasOnAllCores on any thread), under their mutex.
std::atomic<int>& blasCores() // set once, read by BlasOnAllCores on any thread
{
    static std::atomic<int> cores{0};
    return cores;
}

int& blasRaises()
{
    static int raises = 0;
    return raises;
}

std::mutex& blasRaiseMutex()
{
    static std::mutex mutex;
    return mutex;
}

// OpenBLAS at one thread for a scope, as it was afterwards (also when a worker threw). Only the pool's jobs take
// one, one job at a time; it holds BlasOnAllCores' mutex throughout, so a raise on another thread waits for the
// job's end instead of interleaving its own setting and restoring with this one's.
class SingleThreadedBlas {
public:
    SingleThreadedBlas() : lock_(blasRaiseMutex()), before_(openblasThreads())
    {
        if (before_ > 1)
            openblasSetThreads()(1);
    }
    ~SingleThreadedBlas()
    {
        if (before_ > 1)
            openblasSetThreads()(before_);
    }
    SingleThreadedBlas(const SingleThreadedBlas&) = delete;
    SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

private:
    std::unique_lock<std::mutex> lock_;
    int before_;
};

// A worker's LibTorch operations run on the worker alone. With LibTorch's OpenMP backend a thread that is not
// OpenMP's own counts as outside any parallel region, so each worker's element-wise operations would start an
// OpenMP team of every core (a thread per core per worker). Setting this thread's OpenMP team size to one makes
// them run inline. LibTorch sets a thread's team size the first time the thread reaches at::parallel_for (to its
// global count), so that happens first: a softmax reaches it unconditionally.
void keepLibTorchOnThisThread()
{
    static const auto setOmpThreads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    (void)at::softmax(at::zeros({1, 1}), -1);
    if (setOmpThreads)
        setOmpThreads(1);
}

// One job: work(i) for i in [0, count), the calls taken by the workers as they come free.
struct Job {
    const std::function<void(int64_t)>* work = nullptr;
    int64_t count = 0;
    std::atomic<int64_t> next{0};
    at::ThreadLocalState callerState; // grad and inference mode, as on the caller's thread
    std::mutex failureMutex;
    std::exception_ptr failure;

    void drain()
    {
        const at::ThreadLocalStateGuard sameState(callerState);
        for (int64_t i = next++; i < count; i = next++) {
            try {
                (*work)(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failureMutex);
                if (!failure)
                    failure = std::current_exception();
                next = count; // the others stop after their current call
            }
        }
    }
};

// Held by the caller of the pool's job in flight, from before it reads the thread counts (which a job in flight
// has changed) to the job's end: one job at a time, and a second caller waits its turn.
std::mutex& jobTurn()
{
    static std::mutex turn;
    return turn;
}

// The process's CPU workers, started once (at the first job that has more than one call) and kept: a job wakes
// them, they drain it, the caller waits for the last.
// Never destroyed: its threads sleep on `wake_` until the process ends, so no static destructor joins them.
class CorePool {
public:
    static CorePool& instance()
    {
        static CorePool* const pool = new CorePool(cpuWorkers());
        return *pool;
    }

    int64_t workers() const { return static_cast<int64_t>(threads_.size()); }

    // One job; the caller holds jobTurn().
    void run(int64_t count, const std::function<void(int64_t)>& work)
    {
        const SingleThreadedBlas oneBlasThread;
        Job job;
        job.work = &work;
        job.count = count;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            job_ = &job;
            running_ = workers();
            ++generation_;
        }
        wake_.notify_all();
        {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [&] { return running_ == 0; });
            job_ = nullptr;
        }
        if (job.failure)
            std::rethrow_exception(job.failure);
    }

private:
    explicit CorePool(int64_t count)
    {
        balanceCpuThreads();
        for (int64_t t = 0; t < count; ++t) {
            try {
                threads_.emplace_back([this] { serve(); });
            } catch (const std::system_error&) {
                break; // no thread to be had: the ones started share the work
            }
        }
    }

    void serve()
    {
        insideWorkers = true;
        keepLibTorchOnThisThread();
        uint64_t seen = 0;
        for (;;) {
            Job* job = nullptr;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_ != seen; });
                seen = generation_;
                job = job_;
            }
            job->drain();
            const std::lock_guard<std::mutex> lock(mutex_);
            if (--running_ == 0)
                done_.notify_one();
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mutex_; // guards job_, running_, generation_
    std::condition_variable wake_, done_;
    Job* job_ = nullptr;
    int64_t running_ = 0;
    uint64_t generation_ = 0;
};

} // namespace

void balanceCpuThreads()
{
    static std::once_flag once;
    std::call_once(once, [] {
        const int blas = openblasThreads();
        if (blas <= 1)
            return; // no OpenBLAS, or one thread: LibTorch's pool is the only level
        if (!std::getenv("OMP_NUM_THREADS") && at::get_num_threads() < blas)
            at::set_num_threads(blas);
        openblasSetThreads()(1);
        blasCores() = blas;
    });
}

BlasOnAllCores::BlasOnAllCores(bool wanted)
{
    if (!wanted || blasCores() <= 1 || insideWorkers || at::in_parallel_region())
        return;
    const std::lock_guard<std::mutex> lock(blasRaiseMutex());
    if (blasRaises()++ == 0)
        openblasSetThreads()(blasCores());
    raised_ = true;
}

BlasOnAllCores::~BlasOnAllCores()
{
    if (!raised_)
        return;
    const std::lock_guard<std::mutex> lock(blasRaiseMutex());
    if (--blasRaises() == 0)
        openblasSetThreads()(1);
}

int64_t largeGemmThreads()
{
    return std::max(blasCores().load(), openblasThreads());
}

int64_t cpuWorkers()
{
    return std::max({at::get_num_threads(), openblasThreads(), blasCores().load()});
}

void forEachAcrossCores(int64_t count, const std::function<void(int64_t)>& work)
{
    if (count > 1 && !insideWorkers) {
        const std::lock_guard<std::mutex> turn(jobTurn());
        if (std::min(count, cpuWorkers()) > 1) {
            CorePool& pool = CorePool::instance();
            if (pool.workers() > 1) {
                pool.run(count, work);
                return;
            }
        }
    }
    for (int64_t i = 0; i < count; ++i)
        work(i);
}

} // namespace ropescope::model

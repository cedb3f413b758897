#include "core/model/engine/cpu_threads.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <dlfcn.h>

namespace ropescope::model {
namespace {

// Looked up at run time: the BLAS behind libblas.so.3 is a Debian alternative, OpenBLAS or not.
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

// OpenBLAS at one thread for a scope, as it was afterwards (also when a worker threw).
class SingleThreadedBlas {
public:
    SingleThreadedBlas() : before_(openblasThreads())
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
    int before_;
};

thread_local bool insideWorkers = false;

} // namespace

void balanceCpuThreads()
{
    static std::once_flag once;
    std::call_once(once, [] {
        if (at::get_num_threads() > 1 && openblasSetThreads())
            openblasSetThreads()(1);
    });
}

int64_t cpuWorkers()
{
    return std::max(at::get_num_threads(), openblasThreads());
}

void forEachAcrossCores(int64_t count, const std::function<void(int64_t)>& work)
{
    const int64_t workers = std::min(count, cpuWorkers());
    if (workers <= 1 || insideWorkers) {
        for (int64_t i = 0; i < count; ++i)
            work(i);
        return;
    }
    const SingleThreadedBlas oneBlasThread;
    const at::ThreadLocalState callerState;
    std::atomic<int64_t> next{0};
    std::mutex failureMutex;
    std::exception_ptr failure;
    auto drain = [&] {
        const at::ThreadLocalStateGuard sameState(callerState);
        const bool wasInside = std::exchange(insideWorkers, true);
        for (int64_t i = next++; i < count; i = next++) {
            try {
                work(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failureMutex);
                if (!failure)
                    failure = std::current_exception();
                next = count; // the others stop after their current call
            }
        }
        insideWorkers = wasInside;
    };
    std::vector<std::thread> threads;
    for (int64_t t = 1; t < workers; ++t) {
        try {
            threads.emplace_back(drain);
        } catch (const std::system_error&) {
            break; // no thread to be had: the ones started (and this one) share the work
        }
    }
    drain();
    for (auto& thread : threads)
        thread.join();
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace ropescope::model

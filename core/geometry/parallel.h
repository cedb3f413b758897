#pragma once
#include <algorithm>
#include <thread>
#include <vector>

namespace ropescope::geometry {

// Runs fn(begin, end) over [0, n) in contiguous chunks, one per hardware thread, when the work is large
// enough to repay starting threads (~20 us each); otherwise on the calling thread.
template <class Fn> void parallelFor(int n, double workPerItem, Fn&& fn)
{
    constexpr double kWorkPerThread = 2e5; // ~0.1 ms of simple arithmetic
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = std::clamp(static_cast<int>(n * workPerItem / kWorkPerThread), 1, std::min(hardware, std::max(n, 1)));
    if (threads == 1) {
        fn(0, n);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads - 1));
    const int chunk = (n + threads - 1) / threads;
    for (int t = 1; t < threads; ++t) {
        const int begin = std::min(n, t * chunk);
        const int end = std::min(n, begin + chunk);
        pool.emplace_back([&fn, begin, end] { fn(begin, end); });
    }
    fn(0, std::min(n, chunk));
    for (std::thread& th : pool)
        th.join();
}

} // namespace ropescope::geometry

#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace ropescope::cli {

// The median of a non-empty set of timings (the upper middle one for an even count).
inline double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

struct Timing {
    double minMs = 0, medianMs = 0;
    int runs = 0;
};

// Repeats fn until ~0.5 s or 200 runs have passed (at least 5 runs) and keeps min and median.
inline Timing timeIt(const std::function<void()>& fn)
{
    using Clock = std::chrono::steady_clock;
    std::vector<double> ms;
    const auto start = Clock::now();
    while (ms.size() < 5 || (ms.size() < 200 && Clock::now() - start < std::chrono::milliseconds(500))) {
        const auto t0 = Clock::now();
        fn();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return {ms.front(), ms[ms.size() / 2], static_cast<int>(ms.size())};
}

} // namespace ropescope::cli

#include "app/cli/bench_profile.h"

#include "app/cli/cli_error.h"

#include <QJsonArray>

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

// ROPESCOPE_NO_STAGE_PROFILER (the CMake option ROPESCOPE_STAGE_PROFILER=OFF) leaves it out where a LibTorch's
// profiler API differs from the one this file was written against.
#if TORCH_VERSION_MAJOR >= 2 && !defined(ROPESCOPE_NO_STAGE_PROFILER)
#include <torch/csrc/autograd/profiler_kineto.h>
#define ROPESCOPE_STAGE_PROFILER 1
#endif

namespace ropescope::cli {
#ifdef ROPESCOPE_STAGE_PROFILER
namespace {

struct Total {
    int64_t count = 0;
    double ms = 0;
};

// The `limit` names with the most time, longest first; kernel names are C++ templates, cut to stay readable.
QJsonArray heaviest(const std::map<std::string, Total>& totals, size_t limit)
{
    std::vector<std::pair<std::string, Total>> rows(totals.begin(), totals.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    QJsonArray out;
    for (size_t i = 0; i < rows.size() && i < limit; ++i)
        out.append(QJsonObject{{"name", QString::fromStdString(rows[i].first.substr(0, 160))},
                               {"count", static_cast<double>(rows[i].second.count)},
                               {"ms", rows[i].second.ms}});
    return out;
}

// " [16,64,128] [16,128,64]": an operator's input shapes, which tell its calls apart.
std::string shapesOf(const torch::autograd::profiler::KinetoEvent& e)
{
    std::string out;
    if (!e.hasShapes())
        return out;
    for (const auto& shape : e.shapes()) {
        if (shape.empty())
            continue;
        out += " [";
        for (size_t i = 0; i < shape.size(); ++i)
            out += (i ? "," : "") + std::to_string(shape[i]);
        out += "]";
    }
    return out;
}

} // namespace
#endif

bool stageProfilerAvailable()
{
#ifdef ROPESCOPE_STAGE_PROFILER
    return true;
#else
    return false;
#endif
}

QJsonObject profileStage(const std::function<void()>& stage, bool cuda)
{
#ifdef ROPESCOPE_STAGE_PROFILER
    namespace profiler = torch::autograd::profiler;
    using torch::profiler::impl::ActivityType;
    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda)
        activities.insert(ActivityType::CUDA);
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        stage();
    } catch (...) {
        profiler::disableProfiler();
        throw;
    }
    const double wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto result = profiler::disableProfiler();

    std::map<std::string, Total> kernels, operators;
    int64_t kernelCount = 0, launches = 0, operatorCount = 0;
    double kernelMs = 0;
    for (const auto& e : result->events()) {
        const std::string name = e.name();
        const double ms = static_cast<double>(e.durationNs()) / 1e6;
        if (e.deviceType() == c10::DeviceType::CUDA) { // a kernel or a copy on the GPU's own clock
            ++kernelCount;
            kernelMs += ms;
            auto& t = kernels[name];
            ++t.count;
            t.ms += ms;
        } else if (name.find("LaunchKernel") != std::string::npos) {
            ++launches;
        } else if (name.rfind("aten::", 0) == 0) { // operators nest (linear > addmm): times are inclusive
            ++operatorCount;
            auto& t = operators[name + shapesOf(e)];
            ++t.count;
            t.ms += ms;
        }
    }
    return QJsonObject{{"wall_ms", wallMs},
                       {"operators", static_cast<double>(operatorCount)},
                       {"kernels", static_cast<double>(kernelCount)},
                       {"kernel_ms", kernelMs},
                       {"kernel_launches", static_cast<double>(launches)},
                       {"top_operators", heaviest(operators, 25)},
                       {"top_kernels", heaviest(kernels, 25)}};
#else
    (void)stage;
    (void)cuda;
    throw UsageError("--profile needs LibTorch 2.0 or later (this is " TORCH_VERSION ")");
#endif
}

} // namespace ropescope::cli

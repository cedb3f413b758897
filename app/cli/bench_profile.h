#pragma once
#include <QJsonObject>

#include <functional>

namespace ropescope::cli {

// Whether this LibTorch has the Kineto profiler API that profileStage uses (2.0 and later).
bool stageProfilerAvailable();

// Runs `stage` once under LibTorch's profiler (CPU operators, and on CUDA the kernels and their launches)
// and summarises where the time went: wall time, kernel count and time, launch count, and the operators
// and kernels that took the most. What `bench model --profile` writes for each stage (issue 57: find what
// a stage spends beyond its arithmetic).
QJsonObject profileStage(const std::function<void()>& stage, bool cuda);

} // namespace ropescope::cli

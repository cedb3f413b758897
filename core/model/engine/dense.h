#pragma once

#include <ATen/core/Tensor.h>

namespace ropescope::model {

// x @ w^T + b: every projection of the engine's models (at::linear). On the CPU a large GEMM (2^27 multiply-adds,
// 32 rows or more) whose weight holds bf16 values, as checkpoints store them, runs on AMX's tiles where the CPU has
// them (amx_gemm.h: exact to fp32, the weight packed at its first such GEMM and kept); one row of float32 (a decode
// step) as a matrix-vector product; any other large GEMM on every core OpenBLAS has (BlasOnAllCores, cpu_threads.h;
// gemmOverCores says which), a smaller one on the caller's core.
at::Tensor dense(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {});

// Whether a CPU GEMM (or a batch of them) runs over the cores: from 2^27 multiply-adds (about 1.5 ms on one core of
// the 2-core CI machine), or from a weight of 2^23 elements (32 MB at fp32: a decode step's product streams it from
// memory, faster on two cores). Below both, waking OpenBLAS's threads costs more than they save: its idle threads
// spin for a while after each GEMM, against LibTorch's pool in the element-wise work that follows, and the tiny
// Qwen2-VL's decoder took 81-166 ms instead of 21-34 with every GEMM over the cores (docs/SPEED.md, "Engine
// choices measured on the CPU").
inline bool gemmOverCores(const at::Tensor& operand, int64_t multiplyAdds, int64_t weightElements = 0)
{
    return operand.device().is_cpu() && (multiplyAdds >= (int64_t{1} << 27) || weightElements >= (int64_t{1} << 23));
}

} // namespace ropescope::model

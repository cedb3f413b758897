#pragma once
#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <string>
#include <vector>

namespace ropescope::kernels {

// x [M, K] times w [N, K] transposed: [M, N], what at::linear(x, w) gives, for the few rows one MoE expert
// receives (tens of tokens against a weight of megabytes). BLAS repacks all of w on every call, and at 31 rows
// that copy costs as much as the product: OpenBLAS ran Qwen3.5-35B-A3B's expert GEMMs at 25-30 GFLOP/s a core
// here, against 55 for a dense MLP. This kernel reads w's rows where they lie (K contiguous, any row stride, so a
// view into a fused expert tensor works) and packs only x and a 4-row strip of w at a time.
//
// The instruction sets it has a tile for. Best is the widest this CPU runs (AVX-512 where it has it); the others
// are for tests and benchmarks, which run each set the CPU has.
enum class FewRowsIsa { Best, Avx2, Avx512 };

// It runs on one thread (the MoE block runs one expert per core) where all of these hold: CPU tensors, float32,
// x's and w's rows contiguous, at most `linearFewRowsLimit()` rows, no autograd to record, a CPU with `isa` (AVX2
// and FMA at least). Anything else goes to at::linear, so the call is always correct; the two differ by float
// rounding only.
at::Tensor linearFewRows(const at::Tensor& x, const at::Tensor& w, FewRowsIsa isa = FewRowsIsa::Best);

// The most rows the kernel takes: beyond it BLAS's packing is paid for and BLAS is as fast.
int64_t linearFewRowsLimit();

// Whether this process runs the kernel at all (x86-64 with AVX2 and FMA).
bool linearFewRowsAvailable();

// The instruction sets this CPU runs the kernel with, narrowest first (none off x86-64 or without AVX2).
const std::vector<FewRowsIsa>& linearFewRowsIsas();

// What runs for `isa` here, for reports: "AVX-512 (4 x 6 tiles)", or "at::linear" where the CPU has no tile.
std::string linearFewRowsName(FewRowsIsa isa = FewRowsIsa::Best);

} // namespace ropescope::kernels

#pragma once
#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <string>
#include <vector>

namespace ropescope::kernels {

// x [M, K] times w [N, K] transposed: [M, N], what at::linear(x, w) gives, for the few rows one MoE expert
// receives (tens of tokens against a weight of megabytes). BLAS repacks all of w on every call, and at 31 rows
// that copy costs as much as the product. Here w is packed once, when the model loads, into the order the kernel
// reads it, so a call reads each weight once, front to back, while the rows of x stay in registers:
//
//   panels [ceil(N / 48), K, 48]: panel p, row k holds w[48p .. 48p + 47][k], zeros past N.
//
// For each k the kernel loads a panel row (three AVX-512 vectors, or six AVX2 ones) and multiplies it by 8 (or 4)
// rows' x[., k], broadcast: 24 (or 12) accumulators of outputs, no horizontal sums, and the next panel fetched
// into L2 while this one computes.
struct FewRowsWeight {
    at::Tensor panels;   // [panels, K, 48] float32, on the CPU
    int64_t outputs = 0; // N
};

// The instruction sets it has a tile for. Best is the widest this CPU runs (AVX-512 where it has it); the others
// are for tests and benchmarks, which run each set the CPU has.
enum class FewRowsIsa { Best, Avx2, Avx512 };

// The columns of one panel: the AVX-512 tile's three vectors of 16, or two passes of the AVX2 tile's three of 8.
constexpr int64_t kFewRowsPanel = 48;

// w [N, K] (float32 or any type, CPU, any strides) in the kernel's layout, float32. With `into`, the panels are
// written there and view it: a contiguous float32 CPU tensor of fewRowsPanelFloats(N, K) elements (a slice of
// fewRowsStorage, so that many weights share its pages).
FewRowsWeight packFewRowsWeight(const at::Tensor& w, const at::Tensor& into = {});

// The floats of w [n, k]'s panels: the last panel padded to 48 outputs.
int64_t fewRowsPanelFloats(int64_t n, int64_t k);

// Float32 CPU storage for packed weights, zeroed, in 2 MB pages where Linux gives them (transparent huge pages,
// asked for with madvise; elsewhere plain memory). The kernel streams each weight once per call, and with 4 KB
// pages a page walk meets every 4 KB of it; 2 MB pages avoid it (measured: docs/SPEED.md).
at::Tensor fewRowsStorage(int64_t floats);

// The bytes fewRowsStorage has mapped and not yet unmapped (for tests: what a model leaves behind).
int64_t fewRowsStorageBytes();

// w as it was packed: [N, K] float32 (for tests).
at::Tensor unpackFewRowsWeight(const FewRowsWeight& w);

// x [M, K] times w: [M, N]. With `rows` (int64 [R]), the product of x's rows `rows` (x.index_select(0, rows)),
// gathered by the kernel as it reads them. It runs on one thread (the MoE block runs one expert per core) where
// all of these hold: a CPU float32 x whose rows are contiguous, no autograd to record, a CPU with `isa` (AVX2 and
// FMA at least). Anything else is computed with LibTorch operations on the panels, so the call is always correct;
// the two differ by float rounding only.
at::Tensor linearFewRows(const at::Tensor& x, const FewRowsWeight& w, const at::Tensor& rows = {}, FewRowsIsa isa = FewRowsIsa::Best);

// into[i] = scale[i] * (x's row i times w), or the product itself without `scale`, for i < M: an expert's
// outputs, weighted by its tokens' router weights, written in place into the block's rows for them (what
// into.copy_(linearFewRows(x, w) * scale.unsqueeze(1)) does, and does where the kernel does not run). into [M, N]
// float32 contiguous, scale [M] float32.
void linearFewRowsInto(const at::Tensor& x, const FewRowsWeight& w, const at::Tensor& into, const at::Tensor& scale = {},
                       FewRowsIsa isa = FewRowsIsa::Best);

// Whether this process runs the kernel at all (x86-64 with AVX2 and FMA).
bool linearFewRowsAvailable();

// The instruction sets this CPU runs the kernel with, narrowest first (none off x86-64 or without AVX2).
const std::vector<FewRowsIsa>& linearFewRowsIsas();

// What runs for `isa` here, for reports: "AVX-512 (8 rows x 48 outputs)", or "LibTorch" where the CPU has no tile.
std::string linearFewRowsName(FewRowsIsa isa = FewRowsIsa::Best);

} // namespace ropescope::kernels

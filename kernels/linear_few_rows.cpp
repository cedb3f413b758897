#include "kernels/linear_few_rows.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#define ROPESCOPE_FEW_ROWS_X86 1
#include <immintrin.h>
#endif

namespace ropescope::kernels {
namespace {

// Measured on a 2-core EPYC (Zen 3), one thread, at the experts' shapes of Qwen3.5-35B-A3B and Qwen3-VL-30B-A3B
// ([1024 or 1536, 2048] and [2048, 512 or 768]), GFLOP/s of OpenBLAS / this kernel: 8 rows 22-24 / 26-33, 31 rows
// 39-41 / 50-56, 48 rows 57-58 / 52-60, 64 rows 54-60 / 54-61, 128 rows 64-68 / 54-60. From about 48 rows on,
// BLAS's packing pays for itself.
constexpr int64_t kMaxRows = 40;

#ifdef ROPESCOPE_FEW_ROWS_X86
#define ROPESCOPE_AVX2 __attribute__((target("avx2,fma")))

// The tile: 3 rows of x against 4 rows of w, 12 accumulators of 8 lanes (with the 3 x vectors and one w vector,
// all 16 AVX2 registers). Each accumulator holds 8 partial dot products along K.
constexpr int kTileRows = 3, kTileCols = 4, kLanes = 8;
// K is cut into chunks, so that the w strip (4 x 1024 floats, 16 KB) stays in L1 while every x tile passes it.
constexpr int64_t kDepth = 1024;

ROPESCOPE_AVX2 inline float horizontalSum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Rows [0, rows) of `a` (row stride lda), columns [0, depth), as a panel [depth / 8][R][8]: one tile's operand in
// the order the tile reads it. Rows past `rows` and columns past `depth` are zeros, which add nothing.
template <int R> ROPESCOPE_AVX2 void packPanel(const float* a, int64_t lda, int64_t rows, int64_t depth, float* panel)
{
    const int64_t blocks = (depth + kLanes - 1) / kLanes;
    for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t i = 0; i < R; ++i) {
            float* to = panel + (b * R + i) * kLanes;
            const float* from = a + i * lda + b * kLanes;
            if (i < rows && (b + 1) * kLanes <= depth) {
                _mm256_storeu_ps(to, _mm256_loadu_ps(from));
                continue;
            }
            for (int64_t t = 0; t < kLanes; ++t)
                to[t] = i < rows && b * kLanes + t < depth ? from[t] : 0.0f;
        }
    }
}

// Two cache lines of the next w strip per block of 8 (a strip of 4 rows x `depth` floats is depth / 4 lines and a
// tile is depth / 8 blocks): fetched from memory while this tile computes, instead of stalling its packing.
struct NextStrip {
    const float* rows = nullptr; // its first row, or none
    int64_t stride = 0, count = 0, linesPerRow = 0;
};

// sums[i][j] = the dot product of x panel row i and w panel row j over `blocks` blocks of 8.
ROPESCOPE_AVX2 void tileProduct(const float* xPanel, const float* wPanel, int64_t blocks, float sums[kTileRows][kTileCols],
                                const NextStrip& next)
{
    __m256 acc[kTileRows][kTileCols];
#pragma GCC unroll 4
    for (int i = 0; i < kTileRows; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < kTileCols; ++j)
            acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        if (next.rows) {
            const int64_t line = 2 * b, row = line / next.linesPerRow;
            if (row < next.count) { // prefetches never fault, so the second line may run past a short row
                const float* at = next.rows + row * next.stride + (line % next.linesPerRow) * 16;
                __builtin_prefetch(at);
                __builtin_prefetch(at + 16);
            }
        }
        __m256 xs[kTileRows];
#pragma GCC unroll 4
        for (int i = 0; i < kTileRows; ++i)
            xs[i] = _mm256_loadu_ps(xPanel + (b * kTileRows + i) * kLanes);
#pragma GCC unroll 4
        for (int j = 0; j < kTileCols; ++j) {
            const __m256 ws = _mm256_loadu_ps(wPanel + (b * kTileCols + j) * kLanes);
#pragma GCC unroll 4
            for (int i = 0; i < kTileRows; ++i)
                acc[i][j] = _mm256_fmadd_ps(xs[i], ws, acc[i][j]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < kTileRows; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < kTileCols; ++j)
            sums[i][j] = horizontalSum(acc[i][j]);
}

// out [m, n] (zeros on entry) += x [m, k] . w [n, k]^T.
ROPESCOPE_AVX2 void fewRowsProduct(const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw, int64_t n, int64_t k, float* out)
{
    thread_local std::vector<float> xPanels, wPanel;
    const int64_t tiles = (m + kTileRows - 1) / kTileRows;
    for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
        const int64_t depth = std::min(kDepth, k - k0), blocks = (depth + kLanes - 1) / kLanes;
        const int64_t xPanelSize = blocks * kTileRows * kLanes;
        xPanels.resize(static_cast<size_t>(tiles * xPanelSize));
        wPanel.resize(static_cast<size_t>(blocks * kTileCols * kLanes));
        for (int64_t t = 0; t < tiles; ++t)
            packPanel<kTileRows>(x + t * kTileRows * ldx + k0, ldx, std::min<int64_t>(kTileRows, m - t * kTileRows), depth,
                                 xPanels.data() + t * xPanelSize);
        for (int64_t col = 0; col < n; col += kTileCols) {
            const int64_t cols = std::min<int64_t>(kTileCols, n - col);
            packPanel<kTileCols>(w + col * ldw + k0, ldw, cols, depth, wPanel.data());
            NextStrip next;
            if (col + kTileCols < n)
                next = {w + (col + kTileCols) * ldw + k0, ldw, std::min<int64_t>(kTileCols, n - col - kTileCols), (depth + 15) / 16};
            for (int64_t t = 0; t < tiles; ++t) {
                float sums[kTileRows][kTileCols];
                tileProduct(xPanels.data() + t * xPanelSize, wPanel.data(), blocks, sums, t == 0 ? next : NextStrip{});
                const int64_t rows = std::min<int64_t>(kTileRows, m - t * kTileRows);
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j)
                        out[(t * kTileRows + i) * n + col + j] += sums[i][j];
            }
        }
    }
}
#endif

} // namespace

bool linearFewRowsAvailable()
{
#ifdef ROPESCOPE_FEW_ROWS_X86
    static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return available;
#else
    return false;
#endif
}

int64_t linearFewRowsLimit()
{
    return kMaxRows;
}

at::Tensor linearFewRows(const at::Tensor& x, const at::Tensor& w)
{
    const bool fits = x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
        x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && x.size(0) <= kMaxRows && x.stride(1) == 1 && w.stride(1) == 1 &&
        !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) && linearFewRowsAvailable();
    if (!fits)
        return torch::nn::functional::linear(x, w);
    auto out = torch::zeros({x.size(0), w.size(0)}, x.options());
#ifdef ROPESCOPE_FEW_ROWS_X86
    fewRowsProduct(x.data_ptr<float>(), x.stride(0), x.size(0), w.data_ptr<float>(), w.stride(0), w.size(0), x.size(1),
                   out.data_ptr<float>());
#endif
    return out;
}

} // namespace ropescope::kernels

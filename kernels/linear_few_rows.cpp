#include "kernels/linear_few_rows.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#define ROPESCOPE_FEW_ROWS_X86 1
#include <immintrin.h>
#endif

namespace ropescope::kernels {
namespace {

// Measured on a 2-core EPYC (Zen 3), one thread, at the experts' shapes of Qwen3.5-35B-A3B and Qwen3-VL-30B-A3B
// ([1024 or 1536, 2048] and [2048, 512 or 768]), GFLOP/s of OpenBLAS / the AVX2 tile: 8 rows 22-24 / 26-33, 31 rows
// 39-41 / 50-56, 48 rows 57-58 / 52-60, 64 rows 54-60 / 54-61, 128 rows 64-68 / 54-60. From about 48 rows on,
// BLAS's packing pays for itself.
constexpr int64_t kMaxRows = 40;

#ifdef ROPESCOPE_FEW_ROWS_X86
// K is cut into chunks, so that a strip of w (4 or 6 rows x 1024 floats, 16 or 24 KB) stays in L1 while every
// tile of x passes it.
constexpr int64_t kDepth = 1024;
constexpr int64_t kLineFloats = 16; // a 64-byte cache line

// Rows [0, rows) of `a` (row stride lda), columns [0, depth), as a panel [depth / L][R][L]: one tile's operand in
// the order the tile reads it, L floats (one vector) at a time. Rows past `rows` and columns past `depth` are
// zeros, which add nothing.
void packPanel(const float* a, int64_t lda, int64_t rows, int64_t depth, int R, int L, float* panel)
{
    const int64_t blocks = (depth + L - 1) / L;
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t width = std::min<int64_t>(L, depth - b * L);
        for (int64_t i = 0; i < R; ++i) {
            float* to = panel + (b * R + i) * L;
            if (i < rows)
                std::memcpy(to, a + i * lda + b * L, static_cast<size_t>(width) * sizeof(float));
            std::fill(to + (i < rows ? width : 0), to + L, 0.0f);
        }
    }
}

// The next strip of w, fetched from memory while the current strip computes, instead of stalling its packing:
// the strip's cache lines are spread over every block of every tile, `perBlock` lines a block.
struct NextStrip {
    const float* rows = nullptr; // its first row, or none
    int64_t stride = 0, count = 0, linesPerRow = 0;
    int64_t firstLine = 0, perBlock = 0; // this tile's first line, and lines per block
};

inline void prefetchLines(const NextStrip& next, int64_t block)
{
    for (int64_t p = 0; p < next.perBlock; ++p) {
        const int64_t line = next.firstLine + block * next.perBlock + p, row = line / next.linesPerRow;
        if (row >= next.count)
            return;
        __builtin_prefetch(next.rows + row * next.stride + (line % next.linesPerRow) * kLineFloats);
    }
}

// AVX2 + FMA: 3 rows of x against 4 rows of w, 12 accumulators of 8 lanes (with the 3 x vectors and one w vector,
// all 16 registers). Each accumulator holds 8 partial dot products along K.
struct Avx2Tile {
    static constexpr int kRows = 3, kCols = 4, kLanes = 8;
};
#define ROPESCOPE_AVX2 __attribute__((target("avx2,fma")))

ROPESCOPE_AVX2 inline float horizontalSum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// sums[i * kCols + j] = the dot product of x panel row i and w panel row j over `blocks` blocks.
ROPESCOPE_AVX2 void avx2Tile(const float* xPanel, const float* wPanel, int64_t blocks, float* sums, const NextStrip& next)
{
    constexpr int R = Avx2Tile::kRows, C = Avx2Tile::kCols, L = Avx2Tile::kLanes;
    __m256 acc[R][C];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j)
            acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        prefetchLines(next, b);
        __m256 xs[R];
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i)
            xs[i] = _mm256_loadu_ps(xPanel + (b * R + i) * L);
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) {
            const __m256 ws = _mm256_loadu_ps(wPanel + (b * C + j) * L);
#pragma GCC unroll 4
            for (int i = 0; i < R; ++i)
                acc[i][j] = _mm256_fmadd_ps(xs[i], ws, acc[i][j]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j)
            sums[i * C + j] = horizontalSum(acc[i][j]);
}

// AVX-512: 4 rows of x against 6 rows of w, 24 accumulators of 16 lanes (with the 4 x vectors and one w vector,
// 29 of the 32 registers). Per block it loads 10 vectors for 24 FMAs, where the AVX2 tile loads 7 for 12; and a
// strip of 6 rows of w passes the x tiles in two thirds of the passes a 4-row strip takes.
struct Avx512Tile {
    static constexpr int kRows = 4, kCols = 6, kLanes = 16;
};
#define ROPESCOPE_AVX512 __attribute__((target("avx512f,avx2,fma")))

// The sums of four accumulators' 16 lanes each (lanes[a..a+3]), in that order: the two halves of each added, then
// three horizontal adds for the four. (The accumulators go through memory because GCC 12 warns of uninitialised
// operands inside the AVX-512 intrinsics that extract a half.)
ROPESCOPE_AVX2 inline __m256 folded(const float* lanes)
{
    return _mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8));
}

ROPESCOPE_AVX2 inline __m128 fourSums(const float (*lanes)[16])
{
    const __m256 ab = _mm256_hadd_ps(folded(lanes[0]), folded(lanes[1])), cd = _mm256_hadd_ps(folded(lanes[2]), folded(lanes[3]));
    const __m256 abcd = _mm256_hadd_ps(ab, cd); // per 128-bit half: a, b, c, d over lanes 0-3 and 4-7 of each
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

ROPESCOPE_AVX512 void avx512Tile(const float* xPanel, const float* wPanel, int64_t blocks, float* sums, const NextStrip& next)
{
    constexpr int R = Avx512Tile::kRows, C = Avx512Tile::kCols, L = Avx512Tile::kLanes;
    __m512 acc[R * C];
#pragma GCC unroll 24
    for (int a = 0; a < R * C; ++a)
        acc[a] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        prefetchLines(next, b);
        __m512 xs[R];
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i)
            xs[i] = _mm512_loadu_ps(xPanel + (b * R + i) * L);
#pragma GCC unroll 6
        for (int j = 0; j < C; ++j) {
            const __m512 ws = _mm512_loadu_ps(wPanel + (b * C + j) * L);
#pragma GCC unroll 4
            for (int i = 0; i < R; ++i)
                acc[i * C + j] = _mm512_fmadd_ps(xs[i], ws, acc[i * C + j]);
        }
    }
    alignas(64) float lanes[R * C][L];
#pragma GCC unroll 24
    for (int a = 0; a < R * C; ++a)
        _mm512_store_ps(lanes[a], acc[a]);
#pragma GCC unroll 6
    for (int a = 0; a < R * C; a += 4)
        _mm_storeu_ps(sums + a, fourSums(lanes + a));
}

using TileFunction = void (*)(const float*, const float*, int64_t, float*, const NextStrip&);

// out [m, n] (zeros on entry) += x [m, k] . w [n, k]^T, in tiles of R x-rows by C w-rows of L-float vectors.
template <class Tile>
void fewRowsProduct(TileFunction tile, const float* x, int64_t ldx, int64_t m, const float* w, int64_t ldw, int64_t n, int64_t k,
                    float* out)
{
    constexpr int R = Tile::kRows, C = Tile::kCols, L = Tile::kLanes;
    thread_local std::vector<float> xPanels, wPanel;
    const int64_t tiles = (m + R - 1) / R;
    for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
        const int64_t depth = std::min(kDepth, k - k0), blocks = (depth + L - 1) / L;
        const int64_t xPanelSize = blocks * R * L, linesPerRow = (depth + kLineFloats - 1) / kLineFloats;
        xPanels.resize(static_cast<size_t>(tiles * xPanelSize));
        wPanel.resize(static_cast<size_t>(blocks * C * L));
        for (int64_t t = 0; t < tiles; ++t)
            packPanel(x + t * R * ldx + k0, ldx, std::min<int64_t>(R, m - t * R), depth, R, L, xPanels.data() + t * xPanelSize);
        for (int64_t col = 0; col < n; col += C) {
            const int64_t cols = std::min<int64_t>(C, n - col);
            packPanel(w + col * ldw + k0, ldw, cols, depth, C, L, wPanel.data());
            NextStrip next;
            if (col + C < n) {
                const int64_t count = std::min<int64_t>(C, n - col - C), lines = count * linesPerRow;
                next = {w + (col + C) * ldw + k0, ldw, count, linesPerRow, 0, (lines + tiles * blocks - 1) / (tiles * blocks)};
            }
            for (int64_t t = 0; t < tiles; ++t) {
                float sums[R * C];
                next.firstLine = t * blocks * next.perBlock;
                tile(xPanels.data() + t * xPanelSize, wPanel.data(), blocks, sums, next);
                const int64_t rows = std::min<int64_t>(R, m - t * R);
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j)
                        out[(t * R + i) * n + col + j] += sums[i * C + j];
            }
        }
    }
}

bool cpuHas(FewRowsIsa isa)
{
    switch (isa) {
    case FewRowsIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case FewRowsIsa::Avx512: return __builtin_cpu_supports("avx512f");
    case FewRowsIsa::Best: break;
    }
    return false;
}
#endif

// The widest instruction set this CPU runs the kernel with; Best where it runs none.
FewRowsIsa resolved(FewRowsIsa isa)
{
    const auto& isas = linearFewRowsIsas();
    return isa != FewRowsIsa::Best || isas.empty() ? isa : isas.back();
}

template <class Tile> std::string tileName(const char* isa)
{
    return std::string(isa) + " (" + std::to_string(Tile::kRows) + " x " + std::to_string(Tile::kCols) + " tiles)";
}

} // namespace

const std::vector<FewRowsIsa>& linearFewRowsIsas()
{
    static const std::vector<FewRowsIsa> isas = [] {
        std::vector<FewRowsIsa> found;
#ifdef ROPESCOPE_FEW_ROWS_X86
        for (FewRowsIsa isa : {FewRowsIsa::Avx2, FewRowsIsa::Avx512})
            if (cpuHas(isa))
                found.push_back(isa);
#endif
        return found;
    }();
    return isas;
}

std::string linearFewRowsName(FewRowsIsa isa)
{
    switch (resolved(isa)) {
#ifdef ROPESCOPE_FEW_ROWS_X86
    case FewRowsIsa::Avx2: return tileName<Avx2Tile>("AVX2");
    case FewRowsIsa::Avx512: return tileName<Avx512Tile>("AVX-512");
#endif
    default: return "at::linear";
    }
}

bool linearFewRowsAvailable()
{
    return !linearFewRowsIsas().empty();
}

int64_t linearFewRowsLimit()
{
    return kMaxRows;
}

at::Tensor linearFewRows(const at::Tensor& x, const at::Tensor& w, FewRowsIsa isa)
{
    isa = resolved(isa);
    const auto& isas = linearFewRowsIsas();
    const bool fits = x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
        x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && x.size(0) <= kMaxRows && x.stride(1) == 1 && w.stride(1) == 1 &&
        !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) && std::find(isas.begin(), isas.end(), isa) != isas.end();
    if (!fits)
        return torch::nn::functional::linear(x, w);
    auto out = torch::zeros({x.size(0), w.size(0)}, x.options());
    if (x.size(0) == 0 || w.size(0) == 0)
        return out; // no tiles: nothing to spread the next strip's prefetches over
#ifdef ROPESCOPE_FEW_ROWS_X86
    const float* xs = x.data_ptr<float>();
    const float* ws = w.data_ptr<float>();
    if (isa == FewRowsIsa::Avx512)
        fewRowsProduct<Avx512Tile>(avx512Tile, xs, x.stride(0), x.size(0), ws, w.stride(0), w.size(0), x.size(1), out.data_ptr<float>());
    else
        fewRowsProduct<Avx2Tile>(avx2Tile, xs, x.stride(0), x.size(0), ws, w.stride(0), w.size(0), x.size(1), out.data_ptr<float>());
#endif
    return out;
}

} // namespace ropescope::kernels

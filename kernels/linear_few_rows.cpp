#include "kernels/linear_few_rows.h"

#include <torch/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define ROPESCOPE_FEW_ROWS_X86 1
#include <immintrin.h>
#endif

namespace ropescope::kernels {
namespace {

constexpr int64_t P = kFewRowsPanel;

#ifdef ROPESCOPE_FEW_ROWS_X86
// Rows of x are taken 64 at a time (at most 512 KB of x at K = 2048, in L2 beside a panel), so that many rows
// re-read each panel from L2 rather than re-reading all of x from memory for every panel. A block's rows are first
// copied, chunk by chunk, into one buffer with kChunk floats between rows, so that one pointer walks a tile's x
// (row i is at a fixed offset from it): 8 row pointers pushed the loop's pointers into vector registers, which cost
// the tile more than the copy, a few microseconds per expert (docs/SPEED.md, "The MoE block against a dense MLP").
constexpr int64_t kRowBlock = 64;
// Each output sums K in chunks of this many products, added at the end of each chunk (BLAS does the same): the
// rounding of a sum grows with its length. All tiles of rows pass one chunk of a panel before the next, and at 64
// the chunk (12 KB), the tiles' rows of x in it (8 KB) and their sums (12 KB) stay in L1 (48 KB) while they do:
// only the first tile reads the chunk from L2. A larger chunk is re-read from L2 by each tile and measured slower;
// 32 and 128 measured as 64 (docs/SPEED.md, same section).
constexpr int64_t kChunk = 64;
constexpr int64_t kLineBytes = 64;

// The next panel is fetched into L2 while this one computes. All of a panel's products take about as long as
// reading it from memory, and a panel read on demand stalled every first pass over it: its lines are spread over
// every k of every pass instead, one prefetch per k. (Into L2, prefetcht1: L1 holds the rows of x; without the
// prefetch the kernel measured much slower, docs/SPEED.md.) The line count per
// k is rounded up, so the stream runs on past the next panel's end (into the panel after it, or past the weight:
// a prefetch never faults, so nothing checks it).

// One call of a tile: its R rows of x (copied, one chunk of K at a time) against the tile's width of a panel's
// columns starting at `panel` (row stride P), over k in [kBegin, kEnd).
struct Pass {
    const float* x; // the tile's rows in this chunk: x[i * kChunk + k - kBegin] is row i's k
    int64_t kBegin, kEnd;
    const float* panel;
    float* sums; // [R][W], aligned: this range's products are stored there (`add`: added to what is there)
    bool add;
    const char* prefetch; // the next line of the next panel to fetch, and the bytes between two k's lines
    int64_t prefetchStride;
};
using TileFunction = void (*)(const Pass&);

// One tile, written once with GCC's vector types: V is 8 or 16 floats, and the body is inlined into a function
// compiled for the instruction set of that width (below), which turns `acc += xb * w` into FMAs.
// (Shape::Unaligned reads a V from any float's address, so panels need no alignment of their own.)
//
// R rows by 3 vectors of outputs: 3R accumulators, the 3 panel vectors and a broadcast in registers.
template <class Shape, int R> __attribute__((always_inline)) inline void tileBody(const Pass& pass)
{
    using V = typename Shape::V;
    using U = typename Shape::Unaligned;
    constexpr int L = sizeof(V) / sizeof(float), W = 3 * L;
    V acc[R][3] = {};
    // Three pointers walk the loop (x, the panel, the prefetch): with the rows' own pointers the compiler ran
    // out of registers and moved them through vector registers, on the FMAs' ports.
    const float* xk = pass.x;
    const float* p = pass.panel + pass.kBegin * P;
    const char* ahead = pass.prefetch;
    for (int64_t kk = pass.kBegin; kk < pass.kEnd; ++kk, ++xk, p += P, ahead += pass.prefetchStride) {
        __builtin_prefetch(ahead, 0, 2);
        const V w0 = *reinterpret_cast<const U*>(p), w1 = *reinterpret_cast<const U*>(p + L), w2 = *reinterpret_cast<const U*>(p + 2 * L);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
            const V xb = xk[i * kChunk] - V{}; // x in every lane: x - 0 is x, so this is one broadcast
            acc[i][0] += xb * w0;
            acc[i][1] += xb * w1;
            acc[i][2] += xb * w2;
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 3
        for (int v = 0; v < 3; ++v) {
            V* s = reinterpret_cast<V*>(pass.sums + i * W + v * L); // aligned: the buffer is, and W floats are whole vectors
            *s = pass.add ? *s + acc[i][v] : acc[i][v];
        }
}

// AVX2 + FMA: 4 rows by 3 vectors of 8 outputs, 12 accumulators (with the 3 panel vectors and a broadcast, all
// 16 registers). A panel's 48 columns take two passes.
struct Avx2Shape {
    using V = float __attribute__((vector_size(32)));
    using Unaligned = float __attribute__((vector_size(32), aligned(4)));
    static constexpr int kRows = 4, kWidth = 3 * 8;
};
template <int R> __attribute__((target("avx2,fma"))) void avx2Tile(const Pass& pass)
{
    tileBody<Avx2Shape, R>(pass);
}

// AVX-512: 8 rows by 3 vectors of 16 outputs, 24 accumulators (with the 3 panel vectors and a broadcast, 28 of
// the 32 registers). Per k it loads 3 vectors and 8 broadcasts for 24 FMAs.
struct Avx512Shape {
    using V = float __attribute__((vector_size(64)));
    using Unaligned = float __attribute__((vector_size(64), aligned(4)));
    static constexpr int kRows = 8, kWidth = 3 * 16;
};
template <int R> __attribute__((target("avx512f,avx2,fma"))) void avx512Tile(const Pass& pass)
{
    tileBody<Avx512Shape, R>(pass);
}

// tiles[r - 1] takes r rows: the full tile, and one for each remainder.
template <int... Rs> constexpr std::array<TileFunction, sizeof...(Rs)> avx2Tiles(std::integer_sequence<int, Rs...>)
{
    return {avx2Tile<Rs + 1>...};
}
template <int... Rs> constexpr std::array<TileFunction, sizeof...(Rs)> avx512Tiles(std::integer_sequence<int, Rs...>)
{
    return {avx512Tile<Rs + 1>...};
}

// Where product row i goes: row i of base [., n], copied, or times scale[i].
struct Destination {
    float* base;
    const float* scale = nullptr;
};

inline void emit(const Destination& d, int64_t i, int64_t n, int64_t col, const float* sums, int64_t cols)
{
    float* to = d.base + i * n + col;
    if (!d.scale) {
        std::memcpy(to, sums, static_cast<size_t>(cols) * sizeof(float));
        return;
    }
    const float s = d.scale[i];
    for (int64_t j = 0; j < cols; ++j)
        to[j] = s * sums[j];
}

// The products of x's rows (rowIndex[i], or i) and the panels, to `out`, one block of rows at a time. Per panel
// and tile width, K is taken a chunk at a time across every tile of rows, so that the chunk of the panel stays in
// cache while the tiles pass it; each tile's sums wait in a buffer until the last chunk.
template <class Shape, size_t R>
void panelProduct(const std::array<TileFunction, R>& tiles, const float* x, int64_t ldx, const int64_t* rowIndex, int64_t m,
                  const FewRowsWeight& w, const Destination& out)
{
    constexpr int64_t kWidth = Shape::kWidth, kRows = Shape::kRows, kPasses = P / kWidth, kTiles = kRowBlock / kRows;
    const float* panels = w.panels.data_ptr<float>();
    const int64_t count = w.panels.size(0), k = w.panels.size(1), n = w.outputs,
                  lines = k * P * static_cast<int64_t>(sizeof(float)) / kLineBytes;
    alignas(64) static thread_local float sums[kRowBlock * kWidth];
    // A block's rows, tile by tile and chunk by chunk: [tile][chunk][kRows][kChunk].
    const int64_t chunks = (k + kChunk - 1) / kChunk, tileFloats = chunks * kRows * kChunk;
    static thread_local std::vector<float> copied;
    copied.resize(static_cast<size_t>(kTiles * tileFloats));
    // Blocks and tiles of about equal rows: 25 rows are tiles of 7, 6, 6 and 6, not 8, 8, 8 and 1 (a tile of
    // few rows loads its panel rows for few products).
    const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
    for (int64_t b = 0, r0 = 0; b < blocks; ++b) {
        const int64_t blockRows = m / blocks + (b < m % blocks), rowTiles = (blockRows + kRows - 1) / kRows;
        std::array<int64_t, kTiles> tileRows{}, tileStart{};
        for (int64_t t = 0, start = 0; t < rowTiles; ++t) {
            tileRows[t] = blockRows / rowTiles + (t < blockRows % rowTiles);
            tileStart[t] = start;
            start += tileRows[t];
        }
        for (int64_t t = 0; t < rowTiles; ++t)
            for (int64_t i = 0; i < tileRows[t]; ++i) {
                const int64_t row = r0 + tileStart[t] + i;
                const float* from = x + (rowIndex ? rowIndex[row] : row) * ldx;
                float* to = copied.data() + t * tileFloats + i * kChunk;
                for (int64_t c = 0; c < chunks; ++c)
                    std::memcpy(to + c * kRows * kChunk, from + c * kChunk,
                                static_cast<size_t>(std::min(kChunk, k - c * kChunk)) * sizeof(float));
            }
        const int64_t steps = kPasses * rowTiles * k, stride = (lines + steps - 1) / steps * kLineBytes;
        for (int64_t p = 0; p < count; ++p) {
            const float* panel = panels + p * k * P;
            // The last panel has no next: it prefetches itself (already in cache) and what lies beyond.
            const char* next = reinterpret_cast<const char*>(p + 1 < count ? panel + k * P : panel);
            for (int64_t h = 0; h < kPasses; ++h) {
                const int64_t col = p * P + h * kWidth, cols = std::min(kWidth, n - col);
                if (cols <= 0)
                    break; // the last panel's padding
                for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
                    const int64_t k1 = std::min(k, k0 + kChunk);
                    for (int64_t t = 0; t < rowTiles; ++t) {
                        tiles[static_cast<size_t>(tileRows[t] - 1)](Pass{copied.data() + t * tileFloats + k0 / kChunk * kRows * kChunk, k0,
                                                                         k1, panel + h * kWidth, sums + t * kRows * kWidth, k0 > 0, next,
                                                                         stride});
                        next += (k1 - k0) * stride;
                    }
                }
                for (int64_t t = 0; t < rowTiles; ++t)
                    for (int64_t i = 0; i < tileRows[t]; ++i)
                        emit(out, r0 + tileStart[t] + i, n, col, sums + (t * kRows + i) * kWidth, cols);
            }
        }
        r0 += blockRows;
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

template <class Shape> std::string tileName(const char* isa)
{
    return std::string(isa) + " (" + std::to_string(Shape::kRows) + " rows x " + std::to_string(Shape::kWidth) + " outputs)";
}

// The product in LibTorch operations: x times each panel, a 2-D product [M, 48] per panel, laid side by side. Not
// one batched product of [1, M, K] against [panels, K, 48]: matmul broadcasts x by copying it once per panel, and
// with a graph to record (relevancy) the graph keeps those copies. Here each product reads x itself and a view of
// its panel, and the graph keeps nothing but them.
at::Tensor panelsProduct(const at::Tensor& x, const FewRowsWeight& w)
{
    const auto panels = w.panels.to(x.scalar_type());
    const int64_t count = panels.size(0);
    if (count == 0) // no outputs
        return torch::zeros({x.size(0), 0}, x.options());
    std::vector<at::Tensor> each;
    each.reserve(static_cast<size_t>(count));
    for (int64_t p = 0; p < count; ++p)
        each.push_back(x.mm(panels.select(0, p)));
    return torch::cat(each, 1).narrow(1, 0, w.outputs);
}

} // namespace

FewRowsWeight packFewRowsWeight(const at::Tensor& w, const at::Tensor& into)
{
    TORCH_CHECK(w.dim() == 2 && w.device().is_cpu(), "packFewRowsWeight: a 2-D CPU weight, not ", w.sizes());
    const int64_t n = w.size(0), k = w.size(1), count = (n + P - 1) / P;
    TORCH_CHECK(!into.defined() ||
                    (into.device().is_cpu() && into.scalar_type() == at::kFloat && into.is_contiguous() &&
                     into.numel() == fewRowsPanelFloats(n, k)),
                "packFewRowsWeight: storage of ", fewRowsPanelFloats(n, k), " contiguous CPU floats for ", w.sizes(), ", not ",
                into.sizes());
    auto padded = torch::zeros({count * P, k}, torch::kFloat32);
    padded.narrow(0, 0, n).copy_(w);
    const auto panels = padded.view({count, P, k}).transpose(1, 2);
    if (!into.defined())
        return {panels.contiguous(), n};
    return {into.view({count, k, P}).copy_(panels), n};
}

int64_t fewRowsPanelFloats(int64_t n, int64_t k)
{
    return (n + P - 1) / P * P * k;
}

namespace {
std::atomic<int64_t> storageBytesMapped{0};
} // namespace

int64_t fewRowsStorageBytes()
{
    return storageBytesMapped.load();
}

at::Tensor fewRowsStorage(int64_t floats)
{
    TORCH_CHECK(floats >= 0, "fewRowsStorage: ", floats, " floats");
#ifdef __linux__
    constexpr size_t kHuge = size_t{2} << 20;
    // Whole 2 MB pages, at a 2 MB boundary: mapped with one page to spare, the start rounded up to a boundary.
    const size_t bytes = (static_cast<size_t>(floats) * sizeof(float) + kHuge - 1) / kHuge * kHuge, mapped = bytes + kHuge;
    void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
        char* start = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) / kHuge * kHuge);
        ::madvise(start, bytes, MADV_HUGEPAGE); // a request: without THP (or with it off) these stay 4 KB pages
        storageBytesMapped += static_cast<int64_t>(mapped);
        return torch::from_blob(
            start, {floats},
            [base, mapped](void*) {
                ::munmap(base, mapped);
                storageBytesMapped -= static_cast<int64_t>(mapped);
            },
            torch::TensorOptions().dtype(torch::kFloat32));
    }
#endif
    return torch::zeros({floats}, torch::kFloat32);
}

at::Tensor unpackFewRowsWeight(const FewRowsWeight& w)
{
    return w.panels.transpose(1, 2).reshape({w.panels.size(0) * P, w.panels.size(1)}).narrow(0, 0, w.outputs).contiguous();
}

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
    case FewRowsIsa::Avx2: return tileName<Avx2Shape>("AVX2");
    case FewRowsIsa::Avx512: return tileName<Avx512Shape>("AVX-512");
#endif
    default: return "LibTorch";
    }
}

bool linearFewRowsAvailable()
{
    return !linearFewRowsIsas().empty();
}

namespace {

// Whether the kernel takes x (with `isa`), and int64 index vectors where given.
bool kernelTakes(const at::Tensor& x, FewRowsIsa isa, std::initializer_list<const at::Tensor*> indices)
{
    const auto& isas = linearFewRowsIsas();
    bool fits = x.device().is_cpu() && x.scalar_type() == at::kFloat && x.stride(1) == 1 &&
        !(at::GradMode::is_enabled() && x.requires_grad()) && std::find(isas.begin(), isas.end(), isa) != isas.end();
    for (const at::Tensor* index : indices)
        fits = fits &&
            (!index->defined() ||
             (index->device().is_cpu() && index->scalar_type() == at::kLong && index->dim() == 1 && index->is_contiguous()));
    return fits;
}

// The index's entries, each checked to lie in [0, bound): a row outside is an error, not a read or write past it.
const int64_t* checkedRows(const at::Tensor& rows, int64_t bound, const char* what)
{
    if (!rows.defined())
        return nullptr;
    const int64_t* index = rows.data_ptr<int64_t>();
    TORCH_CHECK(std::all_of(index, index + rows.numel(), [bound](int64_t r) { return r >= 0 && r < bound; }),
                "linearFewRows: a row index outside ", what, "'s ", bound, " rows");
    return index;
}

void runKernel(const at::Tensor& x, const int64_t* rowIndex, int64_t m, const FewRowsWeight& w, FewRowsIsa isa, const Destination& out)
{
#ifdef ROPESCOPE_FEW_ROWS_X86
    const float* xs = x.data_ptr<float>();
    if (isa == FewRowsIsa::Avx512) {
        static constexpr auto tiles = avx512Tiles(std::make_integer_sequence<int, Avx512Shape::kRows>{});
        panelProduct<Avx512Shape>(tiles, xs, x.stride(0), rowIndex, m, w, out);
    } else {
        static constexpr auto tiles = avx2Tiles(std::make_integer_sequence<int, Avx2Shape::kRows>{});
        panelProduct<Avx2Shape>(tiles, xs, x.stride(0), rowIndex, m, w, out);
    }
#else
    (void)x, (void)rowIndex, (void)m, (void)w, (void)isa, (void)out;
#endif
}

} // namespace

at::Tensor linearFewRows(const at::Tensor& x, const FewRowsWeight& w, const at::Tensor& rows, FewRowsIsa isa)
{
    TORCH_CHECK(x.dim() == 2 && x.size(1) == w.panels.size(1), "linearFewRows: x ", x.sizes(), " against panels ", w.panels.sizes());
    isa = resolved(isa);
    if (!kernelTakes(x, isa, {&rows}))
        return panelsProduct(rows.defined() ? x.index_select(0, rows) : x, w);
    const int64_t m = rows.defined() ? rows.size(0) : x.size(0);
    if (m == 0 || w.outputs == 0 || x.size(1) == 0)
        return torch::zeros({m, w.outputs}, x.options());
    auto out = torch::empty({m, w.outputs}, x.options());
    runKernel(x, checkedRows(rows, x.size(0), "x"), m, w, isa, {out.data_ptr<float>()});
    return out;
}

void linearFewRowsInto(const at::Tensor& x, const FewRowsWeight& w, const at::Tensor& into, const at::Tensor& scale, FewRowsIsa isa)
{
    TORCH_CHECK(x.dim() == 2 && x.size(1) == w.panels.size(1), "linearFewRowsInto: x ", x.sizes(), " against panels ", w.panels.sizes());
    const int64_t m = x.size(0);
    TORCH_CHECK(into.sizes() == at::IntArrayRef({m, w.outputs}) && (!scale.defined() || scale.sizes() == at::IntArrayRef{m}),
                "linearFewRowsInto: into ", into.sizes(), " and scale ", scale.sizes(), " for ", m, " rows of ", w.outputs, " outputs");
    isa = resolved(isa);
    const bool fits = kernelTakes(x, isa, {}) && into.scalar_type() == at::kFloat && into.is_contiguous() &&
        (!scale.defined() || (scale.scalar_type() == at::kFloat && scale.is_contiguous())) &&
        !(at::GradMode::is_enabled() && (into.requires_grad() || (scale.defined() && scale.requires_grad())));
    if (!fits) {
        const auto product = linearFewRows(x, w, {}, isa);
        into.copy_(scale.defined() ? product * scale.unsqueeze(1) : product);
        return;
    }
    if (m == 0 || w.outputs == 0)
        return;
    if (x.size(1) == 0) {
        into.zero_();
        return;
    }
    runKernel(x, nullptr, m, w, isa, {into.data_ptr<float>(), scale.defined() ? scale.data_ptr<float>() : nullptr});
}

} // namespace ropescope::kernels

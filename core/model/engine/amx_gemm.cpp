#include "core/model/engine/amx_gemm.h"

#include "core/model/engine/cpu_threads.h"

#include <torch/types.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define ROPESCOPE_AMX_KERNELS 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
// Only the kernels are compiled for AMX and AVX-512: the rest of the file (and the check that the CPU has them)
// stays runnable on any x86-64.
#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace ropescope::model::amx {

namespace {

constexpr int64_t kTileElements = 16 * 32; // bf16 values of one A or B tile (16 rows of 64 bytes)
constexpr int64_t kParts = 3;              // hi, mid, lo: 3 x 8 significant bits hold fp32's 24
constexpr int64_t kChunkBlock = 32;        // 32-input chunks a pass of the A block covers (1,024 inputs)
constexpr int64_t kRowBlock = 128;         // rows of the A block kept in L2 while the weight's columns stream
constexpr size_t kHugePage = size_t{2} << 20;

int64_t roundUp(int64_t v, int64_t to)
{
    return (v + to - 1) / to * to;
}

// work(begin, end) over [0, count) cut into `ranges` near-equal pieces, on the engine's CPU workers (cpu_threads.h),
// taken as workers come free. Not at::parallel_for: that is inline code in LibTorch's headers that runs serially
// unless the calling file is compiled with OpenMP (none here), whatever LibTorch was built with.
template <class Work> void overRanges(int64_t count, int64_t ranges, const Work& work)
{
    forEachAcrossCores(ranges, [&](int64_t r) { work(count * r / ranges, count * (r + 1) / ranges); });
}

#ifdef ROPESCOPE_AMX_KERNELS

bool cpuHasAmx()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    const bool avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)); // F, BW, VL
    const bool tiles = (d & (1u << 22)) && (d & (1u << 24));                      // AMX-BF16, AMX-TILE
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    const bool bf16 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5)); // AVX512-BF16
    return avx512 && tiles && bf16;
}

// Linux hands a process the 8 KB of tile state only when asked (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
bool tileStateGranted()
{
    return ::syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

struct TileConfig {
    uint8_t palette = 1, startRow = 0, reserved[14] = {};
    uint16_t columnBytes[16] = {};
    uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate a 32 x 32 block of outputs, 4-5 hold two A tiles (16 rows each), 6-7 two B tiles.
AMX_TARGET void configureTiles()
{
    TileConfig config;
    for (int t = 0; t < 8; ++t) {
        config.columnBytes[t] = 64;
        config.rows[t] = 16;
    }
    _tile_loadconfig(&config);
}

// GCC's tile intrinsics are asm statements without a memory clobber: memory the tiles store and C++ then reads
// (or C++ writes and the tiles load) needs this between them.
inline void compilerBarrier()
{
    asm volatile("" ::: "memory");
}

// bf16 to fp32 (a shift); the masked forms because GCC 12 warns of its own undefined vectors in the plain ones.
AMX_TARGET __m512 widen(__m256bh h)
{
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, (__m256i)h), 16));
}

// One bf16 part of v, truncated (toward zero: a finite value never becomes an infinity, as rounding can above
// bf16's largest value), except that an infinity or NaN passes as itself (truncation could make a NaN an infinity).
AMX_TARGET __m256i truncatedPart(__m512 v, __mmask16 special)
{
    const __m256i truncated = _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, _mm512_castps_si512(v), 16));
    return _mm256_mask_mov_epi16(truncated, special, (__m256i)_mm512_cvtneps_pbh(v));
}

// Rows [begin, end) of x (padded rows beyond `rows` are zeros) into the three parts, laid out
// [row tile][chunk][part][16 rows][32 inputs] so that every A tile is 1 KB in one piece. Each part holds the next 8
// significant bits of what the earlier ones left, so the three hold fp32's 24 exactly. An infinity or NaN goes whole
// into the first part, the others 0: its products are those of an fp32 GEMM (inf or NaN), not inf - inf.
AMX_TARGET void splitRows(const float* x, int64_t rows, int64_t inputs, int64_t chunks, int64_t begin, int64_t end, uint16_t* parts)
{
    const __m512i exponent = _mm512_set1_epi32(0x7F800000); // all ones there: an infinity or a NaN
    for (int64_t r = begin; r < end; ++r) {
        const float* row = r < rows ? x + r * inputs : x; // a padded row loads nothing (mask 0)
        for (int64_t c = 0; c < chunks; ++c)
            for (int64_t half = 0; half < 2; ++half) {
                const int64_t k = c * 32 + half * 16;
                const int64_t valid = r < rows ? std::min<int64_t>(16, std::max<int64_t>(0, inputs - k)) : 0;
                __m512 rest = _mm512_maskz_loadu_ps(static_cast<__mmask16>((uint32_t{1} << valid) - 1), valid ? row + k : x);
                const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(rest), exponent), exponent);
                uint16_t* out = parts + ((r / 16 * chunks + c) * kParts) * kTileElements + (r % 16) * 32 + half * 16;
                for (int64_t p = 0; p < kParts; ++p) {
                    const __m256i part = truncatedPart(rest, special);
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * kTileElements), part);
                    rest = _mm512_maskz_sub_ps(static_cast<__mmask16>(~special), rest, widen((__m256bh)part));
                }
            }
    }
}

struct Operands {
    const uint16_t* parts; // the activations' parts (splitRows)
    const uint16_t* tiles; // the weight (PackedWeight)
    float* partial;        // [row tile][column tile][16 x 16] sums between chunk blocks (when chunks > kChunkBlock)
    float* out;            // [rows, outputs]
    const float* bias;     // [outputs] or null
    int64_t rows, paddedRows, outputs, chunks;
};

// Tiles 0-3 (the 32 x 32 outputs at row m, columns 32 j) into out, with the bias, rows beyond `rows` dropped.
AMX_TARGET void storeOutputs(const Operands& o, int64_t m, int64_t j)
{
    alignas(64) float tiles[4][16 * 16];
    _tile_stored(0, tiles[0], 64);
    _tile_stored(1, tiles[1], 64);
    _tile_stored(2, tiles[2], 64);
    _tile_stored(3, tiles[3], 64);
    compilerBarrier();
    for (int t = 0; t < 4; ++t) {
        const int64_t row0 = m + (t / 2) * 16, col = j * 32 + (t % 2) * 16;
        const __m512 bias = o.bias ? _mm512_loadu_ps(o.bias + col) : _mm512_setzero_ps();
        for (int64_t r = 0; r < 16 && row0 + r < o.rows; ++r)
            _mm512_storeu_ps(o.out + (row0 + r) * o.outputs + col, _mm512_add_ps(_mm512_load_ps(tiles[t] + r * 16), bias));
    }
}

AMX_TARGET float* partialTile(const Operands& o, int64_t m, int64_t j, int t)
{
    return o.partial + ((m / 16 + t / 2) * (o.outputs / 16) + j * 2 + t % 2) * 256;
}

// One 32 x 32 block of outputs over chunks [c0, c1): the B tiles are loaded once for the three parts' A tiles,
// and every load is placed between products that do not read its tile (tiles are not renamed: a load waits for
// the products reading its tile before it).
// `next`: the two weight tiles' runs the next block will read, of which this block prefetches its `share` (a
// part of 1 / `shares`) into L2 while it computes: the weight streams from memory once a row block, and its tile
// loads would otherwise wait on each miss.
struct Prefetch {
    const char* next[2];
    int64_t share, shares;
};

AMX_TARGET void multiplyBlock(const Operands& o, int64_t m, int64_t j, int64_t c0, int64_t c1, const Prefetch& prefetch)
{
    if (c0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, partialTile(o, m, j, 0), 64);
        _tile_loadd(1, partialTile(o, m, j, 1), 64);
        _tile_loadd(2, partialTile(o, m, j, 2), 64);
        _tile_loadd(3, partialTile(o, m, j, 3), 64);
    }
    const uint16_t* b0 = o.tiles + (2 * j * o.chunks + c0) * kTileElements;
    const uint16_t* b1 = b0 + o.chunks * kTileElements;
    const uint16_t* a0 = o.parts + ((m / 16) * o.chunks + c0) * kParts * kTileElements;
    const uint16_t* a1 = a0 + o.chunks * kParts * kTileElements;
    const int64_t prefetchBytes = (c1 - c0) * kTileElements * 2 / prefetch.shares,
                  linesPerChunk = std::max<int64_t>(1, prefetchBytes / 64 / (c1 - c0));
    const char* ahead[2] = {prefetch.next[0] ? prefetch.next[0] + prefetch.share * prefetchBytes : nullptr,
                            prefetch.next[1] ? prefetch.next[1] + prefetch.share * prefetchBytes : nullptr};
    for (int64_t c = c0; c < c1;
         ++c, b0 += kTileElements, b1 += kTileElements, a0 += kParts * kTileElements, a1 += kParts * kTileElements) {
        if (ahead[0])
            for (int64_t l = 0; l < linesPerChunk; ++l) {
                _mm_prefetch(ahead[0] + ((c - c0) * linesPerChunk + l) * 64, _MM_HINT_T1);
                _mm_prefetch(ahead[1] + ((c - c0) * linesPerChunk + l) * 64, _MM_HINT_T1);
            }
        _tile_loadd(6, b0, 64);
        _tile_loadd(4, a0, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b1, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a1, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        _tile_loadd(4, a0 + kTileElements, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a1 + kTileElements, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        _tile_loadd(4, a0 + 2 * kTileElements, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a1 + 2 * kTileElements, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    if (c1 == o.chunks) {
        storeOutputs(o, m, j);
    } else {
        _tile_stored(0, partialTile(o, m, j, 0), 64);
        _tile_stored(1, partialTile(o, m, j, 1), 64);
        _tile_stored(2, partialTile(o, m, j, 2), 64);
        _tile_stored(3, partialTile(o, m, j, 3), 64);
        compilerBarrier();
    }
}

// Output column pairs [j0, j1) (32 columns each) on this thread. Blocked as a GEMM is: a block of A (kRowBlock
// rows x kChunkBlock chunks, 768 KB of parts) stays in L2 while the weight's columns stream past it once.
// Partial sums between chunk blocks go to a tile-shaped buffer: stored with the output's row stride, every tile
// row is another page, and the TLB misses cost 3x the GEMM (measured).
AMX_TARGET void multiplyColumns(const Operands& o, int64_t j0, int64_t j1)
{
    configureTiles();
    for (int64_t c0 = 0; c0 < o.chunks; c0 += kChunkBlock) {
        const int64_t c1 = std::min(o.chunks, c0 + kChunkBlock);
        for (int64_t m0 = 0; m0 < o.paddedRows; m0 += kRowBlock) {
            const int64_t m1 = std::min(o.paddedRows, m0 + kRowBlock);
            for (int64_t j = j0; j < j1; ++j) {
                Prefetch prefetch{{nullptr, nullptr}, 0, (m1 - m0) / 32};
                if (j + 1 < j1)
                    for (int half = 0; half < 2; ++half)
                        prefetch.next[half] =
                            reinterpret_cast<const char*>(o.tiles + ((2 * (j + 1) + half) * o.chunks + c0) * kTileElements);
                for (int64_t m = m0; m < m1; m += 32, ++prefetch.share)
                    multiplyBlock(o, m, j, c0, c1, prefetch);
            }
        }
    }
    _tile_release();
}

#endif // ROPESCOPE_AMX_KERNELS

} // namespace

bool available()
{
#ifdef ROPESCOPE_AMX_KERNELS
    static const bool yes = [] {
        const char* env = std::getenv("ROPESCOPE_AMX");
        return !(env && std::strcmp(env, "0") == 0) && cpuHasAmx() && tileStateGranted();
    }();
    return yes;
#else
    return false;
#endif
}

void PackedWeight::Free::operator()(uint16_t* p) const
{
    std::free(p);
}

double PackedWeight::bytesFor(int64_t outputs, int64_t inputs)
{
    return 2.0 * double(outputs) * double(roundUp(inputs, 32));
}

std::shared_ptr<const PackedWeight> PackedWeight::pack(const at::Tensor& w)
{
    if (!available() || w.dim() != 2 || w.scalar_type() != at::kFloat || !w.device().is_cpu() || w.size(0) == 0 || w.size(0) % 32 != 0 ||
        w.size(1) == 0)
        return nullptr;
    const at::Tensor weight = w.contiguous();
    auto packed = std::make_shared<PackedWeight>();
    packed->outputs_ = weight.size(0), packed->inputs_ = weight.size(1), packed->chunks_ = roundUp(weight.size(1), 32) / 32;
    const size_t bytes = size_t(PackedWeight::bytesFor(packed->outputs_, packed->inputs_));
    packed->tiles_.reset(static_cast<uint16_t*>(std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage)));
    if (!packed->tiles_)
        return nullptr;
#ifdef ROPESCOPE_AMX_KERNELS
    ::madvise(packed->tiles_.get(), bytes, MADV_HUGEPAGE); // streamed through the TLB in every GEMM; a hint only
#endif
    std::atomic<bool> everyValueBf16{true};
    const float* source = weight.data_ptr<float>();
    const int64_t inputs = packed->inputs_, chunks = packed->chunks_;
    uint16_t* tiles = packed->tiles_.get();
    const int64_t columnTiles = packed->outputs_ / 16;
    overRanges(columnTiles, std::min(columnTiles, cpuWorkers()), [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end && everyValueBf16.load(std::memory_order_relaxed); ++t) {
            uint16_t* column = tiles + t * chunks * kTileElements;
            std::memset(column, 0, size_t(chunks * kTileElements) * 2);
            for (int64_t n = 0; n < 16; ++n) {
                const float* row = source + (t * 16 + n) * inputs;
                for (int64_t k = 0; k < inputs; ++k) {
                    uint32_t bits;
                    std::memcpy(&bits, row + k, 4);
                    if (bits & 0xFFFFu) {
                        everyValueBf16 = false;
                        return;
                    }
                    column[(k / 32) * kTileElements + (k % 32 / 2) * 32 + n * 2 + k % 2] = uint16_t(bits >> 16);
                }
            }
        }
    });
    return everyValueBf16 ? packed : nullptr;
}

at::Tensor linear(const at::Tensor& x, const PackedWeight& w, const at::Tensor& b)
{
    TORCH_CHECK(x.scalar_type() == at::kFloat && x.device().is_cpu() && x.size(-1) == w.inputs(), "amx::linear: x must be float32 [..., ",
                w.inputs(), "]");
    TORCH_CHECK(!b.defined() || (b.scalar_type() == at::kFloat && b.numel() == w.outputs()), "amx::linear: bias must be float32 [",
                w.outputs(), "]");
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.outputs();
    const at::Tensor rows = x.reshape({-1, w.inputs()}).contiguous();
    at::Tensor out = torch::empty({rows.size(0), w.outputs()}, rows.options());
    if (rows.size(0) == 0)
        return out.view(shape);
#ifdef ROPESCOPE_AMX_KERNELS
    const at::Tensor bias = b.defined() ? b.contiguous() : at::Tensor();
    const int64_t padded = roundUp(rows.size(0), 32);
    const at::Tensor parts = torch::empty({padded * w.chunks() * kParts * kTileElements}, rows.options().dtype(at::kShort));
    const at::Tensor partial = w.chunks() > kChunkBlock ? torch::empty({padded * w.outputs()}, rows.options()) : at::Tensor();
    const Operands o{reinterpret_cast<const uint16_t*>(parts.data_ptr<int16_t>()),
                     w.tiles(),
                     partial.defined() ? partial.data_ptr<float>() : nullptr,
                     out.data_ptr<float>(),
                     bias.defined() ? bias.data_ptr<float>() : nullptr,
                     rows.size(0),
                     padded,
                     w.outputs(),
                     w.chunks()};
    const int64_t workers = cpuWorkers(), rowTiles = padded / 16;
    overRanges(rowTiles, std::min(workers, rowTiles), [&](int64_t begin, int64_t end) {
        splitRows(rows.data_ptr<float>(), o.rows, w.inputs(), o.chunks, begin * 16, end * 16, const_cast<uint16_t*>(o.parts));
    });
    // Column ranges of at least 32 pairs (each re-reads every row's parts) in a multiple of the workers: a core the
    // host slows down takes fewer.
    const int64_t pairs = w.outputs() / 32, ranges = std::min(pairs, workers * std::max<int64_t>(1, pairs / (32 * workers)));
    overRanges(pairs, ranges, [&](int64_t begin, int64_t end) { multiplyColumns(o, begin, end); });
#endif
    return out.view(shape);
}

} // namespace ropescope::model::amx

#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

// An fp32 GEMM on Intel AMX's bf16 tiles (Sapphire Rapids and later), exact to fp32 where the weight's values are
// bf16, as every checkpoint the engine reads stores them. The activations are split into three bf16 parts,
// x = hi + mid + lo exactly (24 significand bits in three of 8), so each product of a part and a weight value is
// exact in fp32 and the tiles accumulate in fp32, as an fp32 GEMM does, in another order. Three tile products
// where fp32 needs one, and still 3-4x OpenBLAS's fp32 GEMM on the 2-core CI machine (docs/SPEED.md, "AMX").
// No library does this: oneDNN and LibTorch run bf16 GEMMs on AMX, which round the activations to 8 bits.
namespace ropescope::model::amx {

// Whether this process runs AMX tile GEMMs: the CPU has AMX-BF16 and AVX512-BF16, Linux granted the tiles' state
// (arch_prctl), and ROPESCOPE_AMX is not "0" (for A/B measurements). Checked once.
bool available();

// A weight [N, K] (N a multiple of 32) whose every value is a bf16, laid out as AMX tiles: for each 16 outputs and
// 32 inputs one 16 x 32 bf16 tile holding the input pairs side by side (K zero-padded to a multiple of 32).
class PackedWeight {
public:
    // Null when w is not such a weight (not a 2-D float32 CPU tensor, N not a multiple of 32, a value that is no
    // bf16) or AMX is not available.
    static std::shared_ptr<const PackedWeight> pack(const at::Tensor& w);

    int64_t outputs() const { return outputs_; }
    int64_t inputs() const { return inputs_; }
    int64_t chunks() const { return chunks_; } // 32-input chunks
    const uint16_t* tiles() const { return tiles_.get(); }
    // The bytes pack would take for a weight of this shape.
    static double bytesFor(int64_t outputs, int64_t inputs);

private:
    struct Free {
        void operator()(uint16_t* p) const;
    };
    int64_t outputs_ = 0, inputs_ = 0, chunks_ = 0;
    std::unique_ptr<uint16_t[], Free> tiles_;
};

// x [..., K] (float32, CPU) @ w^T + b (b undefined or [N] float32): [..., N], on the engine's CPU workers
// (forEachAcrossCores, cpu_threads.h; on the calling thread alone inside one of them).
at::Tensor linear(const at::Tensor& x, const PackedWeight& w, const at::Tensor& b = {});

} // namespace ropescope::model::amx

#pragma once

namespace ropescope::model {

// Keeps large freed host buffers in the process heap for reuse instead of returning them to the kernel.
// A forward pass allocates and frees tens of MB per layer (activations, attention scores); glibc serves
// each such block with a fresh mmap, so every run faults and zeroes every page again. Measured A/B (bench
// model, 2 cores, 1002 tokens, three alternating runs): Qwen2-VL-tiny vision 278-295 -> 154-177 ms, decoder
// 67-73 -> 43-53 ms; Qwen2.5-VL-tiny vision 153-175 -> 85-106 ms; real Qwen2-VL-2B shapes, 256 patches:
// vision 9.4 -> 6.1 s (its decoder is GEMM-bound either way). Forward peak memory unchanged (+2 MB).
// Idempotent; a no-op off glibc.
void reuseLargeHostAllocations();

} // namespace ropescope::model

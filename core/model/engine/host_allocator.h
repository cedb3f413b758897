#pragma once
#include <string>

namespace ropescope::model {

// Keeps large freed host buffers in the process heap for reuse instead of returning them to the kernel.
// A forward pass allocates and frees tens of MB per layer (activations, attention scores); glibc serves
// each such block with a fresh mmap, so every run faults and zeroes every page again. Measured A/B (bench
// model, 2 cores, 1002 tokens, three alternating runs): Qwen2-VL-tiny vision 278-295 -> 154-177 ms, decoder
// 67-73 -> 43-53 ms; Qwen2.5-VL-tiny vision 153-175 -> 85-106 ms; real Qwen2-VL-2B shapes, 256 patches:
// vision 9.4 -> 6.1 s (its decoder is GEMM-bound either way); tiny models' forward peak unchanged (+2 MB),
// at full 2B shapes it grows 0.59 -> 1.43 GB (fragmentation; docs/SPEED.md has the trade-off).
// Idempotent; a no-op off glibc.
void reuseLargeHostAllocations();

// Hands the free pages inside the heap back to the kernel (malloc_trim). Called once a model is loaded:
// without it the loading temporaries stay resident (4.4 GB for random 2B weights). Not after every run:
// like PyTorch's CUDA caching allocator, the process keeps one run's working memory (the bench's forward
// peak) for the next; trimming after each run measured qwen2vl-tiny prefill 43-53 -> 60-69 ms. No-op off glibc.
void releaseFreeHostMemory();

// This machine's physical memory in bytes (0 where it cannot be read): what prompt-size checks compare with.
double physicalMemoryBytes();

// Work that would need more than half of this machine's memory is refused before it starts, naming what
// grows: throws ModelError "<what> needs about X GB, more than half of this machine's Y GB: <advice>".
void refuseOverHalfTheMemory(double bytes, const std::string& what, const std::string& advice);

} // namespace ropescope::model

#pragma once
#include <string>

namespace ropescope::model {

// Keeps large freed host buffers in the process heap for reuse instead of returning them to the kernel.
// A forward pass allocates and frees tens of MB per layer (activations, attention scores); glibc serves
// each such block with a fresh mmap, so every run faults and zeroes every page again. Keeping the blocks is
// much faster and costs peak memory at full shapes (fragmentation): docs/SPEED.md, "Engine choices measured
// on the CPU", has the measured trade-off.
// Idempotent; a no-op off glibc.
void reuseLargeHostAllocations();

// Hands the free pages inside the heap back to the kernel (malloc_trim). Called once a model is loaded:
// without it the loading temporaries stay resident. Not after every run: like PyTorch's CUDA caching
// allocator, the process keeps one run's working memory (the bench's forward peak) for the next; trimming
// after each run measured slower (docs/SPEED.md). No-op off glibc.
void releaseFreeHostMemory();

// This machine's physical memory in bytes (0 where it cannot be read): what prompt-size checks compare with.
double physicalMemoryBytes();

// The bytes the kernel would still hand out now (MemAvailable), 0 where /proc/meminfo cannot be read: what an
// optional cache (the AMX packed weights) checks before it takes memory.
double availableMemoryBytes();

// Work that would need more than half of this machine's memory is refused before it starts, naming what
// grows: throws ModelError "<what> needs about X GB, more than half of this machine's Y GB: <advice>".
void refuseOverHalfTheMemory(double bytes, const std::string& what, const std::string& advice);

} // namespace ropescope::model

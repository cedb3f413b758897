#include "core/model/engine/dense.h"

#include "core/model/engine/amx_gemm.h"
#include "core/model/engine/cpu_threads.h"
#include "core/model/engine/host_allocator.h"

#include <torch/nn/functional/linear.h>

#include <c10/core/Storage.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace ropescope::model {

namespace {

// The packed form of every weight a large GEMM met, made once: a weight is known by its storage (held weakly, so
// a freed model's entries go), offset and shape, and repacked when written in place (its version moves on). A
// weight that cannot be packed (a value that is no bf16) is remembered as such, and so is one that would leave
// less than its own size of memory free: that one stays on OpenBLAS.
struct PackedEntry {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    int64_t offset = 0;
    std::vector<int64_t> sizes, strides;
    int64_t version = 0;
    std::shared_ptr<const amx::PackedWeight> packed;
};

// An inference tensor keeps no version counter (asking throws): it cannot be written outside inference mode.
int64_t versionOf(const at::Tensor& w)
{
    return w.is_inference() ? -1 : int64_t(w._version());
}

std::shared_ptr<const amx::PackedWeight> packedWeight(const at::Tensor& w)
{
    static std::mutex mutex;
    static std::vector<PackedEntry> entries;
    const std::lock_guard<std::mutex> lock(mutex);
    entries.erase(std::remove_if(entries.begin(), entries.end(), [](const PackedEntry& e) { return e.storage.expired(); }), entries.end());
    const c10::StorageImpl* storage = w.storage().unsafeGetStorageImpl();
    for (PackedEntry& e : entries)
        if (e.storage._unsafe_get_target() == storage && e.offset == w.storage_offset() && e.sizes == w.sizes().vec() &&
            e.strides == w.strides().vec()) {
            if (e.version != versionOf(w))
                e.packed = amx::PackedWeight::pack(w), e.version = versionOf(w);
            return e.packed;
        }
    const double bytes = amx::PackedWeight::bytesFor(w.size(0), w.size(1));
    PackedEntry e{w.storage().getWeakStorageImpl(), w.storage_offset(), w.sizes().vec(), w.strides().vec(), versionOf(w), nullptr};
    if (availableMemoryBytes() >= 2 * bytes)
        e.packed = amx::PackedWeight::pack(w);
    entries.push_back(e);
    return e.packed;
}

// A large CPU GEMM of float32 values that autograd does not follow, with 32k outputs and at least 32 rows: the AMX
// kernel's case. Fewer rows (a decode step, the last token's logits) stream the weight from memory, which OpenBLAS
// (its gemv for one row, below) does as fast, without a packed copy (Gemma 4 31B's tied head would cost 2.8 GB more).
bool amxCase(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t rows)
{
    const int64_t multiplyAdds = rows * w.numel();
    const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad()));
    return rows >= 32 && multiplyAdds >= (int64_t{1} << 27) && x.device().is_cpu() && x.scalar_type() == at::kFloat && w.dim() == 2 &&
        w.scalar_type() == at::kFloat && w.size(0) % 32 == 0 && (!b.defined() || b.scalar_type() == at::kFloat) && !grad &&
        amx::available();
}

} // namespace

at::Tensor dense(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b)
{
    const int64_t rows = x.dim() == 0 || x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
    if (amxCase(x, w, b, rows))
        if (const auto packed = packedWeight(w))
            return amx::linear(x, *packed, b);
    const BlasOnAllCores cores(gemmOverCores(x, rows * w.numel(), w.numel()));
    if (rows == 1 && x.device().is_cpu() && x.scalar_type() == at::kFloat && w.dim() == 2) {
        // One row (a decode step, the last token's logits): a matrix-vector product streams the weight once, where
        // OpenBLAS's GEMM first copies it into its panels: 2-2.4x faster (Gemma 4 31B's MLP and tied head).
        std::vector<int64_t> shape = x.sizes().vec();
        shape.back() = w.size(0);
        const at::Tensor y = torch::mv(w, x.reshape({w.size(1)}));
        return (b.defined() ? y + b : y).view(shape);
    }
    return torch::nn::functional::linear(x, w, b);
}

} // namespace ropescope::model

#pragma once
// A training pipeline's dump of its batches for check-positions: one batch per file, as safetensors'
// save_file, np.savez / np.savez_compressed (.npz) or torch.save of a dict of tensors (.pt) writes it, or a
// folder of such files (name order). Every file is read bounded and checked; a bad one is a BadInputFile
// naming it.
#include "core/model/analysis/position_check.h"

#include <QString>

#include <functional>
#include <vector>

namespace ropescope::model {

constexpr int64_t kMaxDumpFileBytes = int64_t(2) << 30;
constexpr int kMaxDumpFiles = 100000;

// The dump's files: `path` itself, or a folder's .safetensors/.npz/.pt files in name order.
std::vector<QString> dumpFiles(const QString& path);
// One file's batch (.safetensors, .npz; .pt through LibTorch, position_dump_torch.cpp).
DumpBatch readDumpBatch(const QString& file);
DumpBatch readTorchSaveBatch(const QString& file); // LibTorch's reader of torch.save archives

} // namespace ropescope::model

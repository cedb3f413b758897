#pragma once
// A training pipeline's dump of its batches for check-positions: one batch per file, as safetensors'
// save_file, np.savez / np.savez_compressed (.npz) or torch.save of a dict of tensors (.pt) writes it, or a
// folder of such files (name order). Every file is read bounded and checked; a bad one is a BadInputFile
// naming it.
#include "core/model/analysis/position_check.h"

#include <QJsonObject>
#include <QString>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ropescope::model {

constexpr int64_t kMaxDumpFileBytes = int64_t(2) << 30;
constexpr int kMaxDumpFiles = 100000;

// The dump's files: `path` itself, or a folder's .safetensors/.npz/.pt files in name order.
std::vector<QString> dumpFiles(const QString& path);
// One file's batch (.safetensors, .npz; .pt through LibTorch, position_dump_torch.cpp).
DumpBatch readDumpBatch(const QString& file);
DumpBatch readTorchSaveBatch(const QString& file); // LibTorch's reader of torch.save archives

// A whole dump checked: what `check-positions`, batch items and the window's dialog show.
struct DumpCheck {
    int64_t batches = 0, samples = 0;
    std::vector<SampleCheck> differing; // in dump order
    std::map<std::string, int> kinds;   // faultKindName -> samples
    bool cancelled = false;
};
// Reads and checks every batch of `dump` (dumpFiles' order). The first `keepPositionsFor` differing samples keep
// their positions (for figures). `progress(batches done, batches)` after each batch; `cancelled` is asked
// between batches. Throws BadInputFile for a dump that cannot be checked.
DumpCheck checkDump(const QString& dump, const PositionRule& rule, int keepPositionsFor,
                    const std::function<void(int64_t, int64_t)>& progress = {}, const std::function<bool()>& cancelled = {});
// report.json: the family, the counts, every differing sample (sampleCheckJson).
QJsonObject dumpCheckJson(const DumpCheck& check, const QString& family, const QString& dump);

} // namespace ropescope::model

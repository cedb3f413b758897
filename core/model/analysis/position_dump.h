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
// The checked tensors of one dump file hold at most this many elements together (256 MiB as int64), counted on
// their declared shapes before anything is inflated, expanded or copied: a real batch holds far fewer.
constexpr int64_t kMaxDumpElements = int64_t(1) << 25;
// A report lists at most this many differing samples (about 400 bytes each in report.json, some 2.7 KB each in
// memory while the JSON is built); the counts are all.
constexpr int kMaxListedSamples = 20000;

// The dump's files: `path` itself, or a folder's .safetensors/.npz/.pt files in name order (a dangling link
// with such a name is refused, naming it).
std::vector<QString> dumpFiles(const QString& path);
// One file's batch (.safetensors, .npz, .pt): only the tensors checkBatch reads, one copy of each element.
DumpBatch readDumpBatch(const QString& file);

// Where a check stands: after each file and every few thousand samples.
struct DumpProgress {
    int64_t files = 0, filesDone = 0, samples = 0;
};

// A whole dump checked: what `check-positions`, batch items and the window's dialog show.
struct DumpCheck {
    int64_t batches = 0, samples = 0;
    int64_t differingTotal = 0;           // all the differing samples
    std::vector<SampleCheck> differing;   // the first of them (checkDump's keepListed), in dump order
    std::map<std::string, int64_t> kinds; // faultKindName -> samples
    bool cancelled = false;
};
// Reads and checks every batch of `dump` (dumpFiles' order), one file at a time, its samples streamed: a sample
// is kept only when it is among the first `keepListed` differing ones, and keeps its positions (for figures)
// when among the first `keepPositionsFor`. `progress` is told after each file and every 4096 samples;
// `cancelled` is asked as often. Throws BadInputFile for a dump that cannot be checked.
DumpCheck checkDump(const QString& dump, const PositionRule& rule, int keepPositionsFor, int keepListed,
                    const std::function<void(const DumpProgress&)>& progress = {}, const std::function<bool()>& cancelled = {});
// report.json: the family, the counts, the listed differing samples (sampleCheckJson).
QJsonObject dumpCheckJson(const DumpCheck& check, const QString& family, const QString& dump);

} // namespace ropescope::model

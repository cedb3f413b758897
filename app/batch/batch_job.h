#pragma once
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <stdexcept>
#include <vector>

namespace ropescope::batch {

// A job file could not be read at all (exit code 2).
class JobError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One figure or table to produce, after sweeps are expanded.
struct BatchItem {
    int index = 0;          // position in the expanded list, 1-based
    int jobItem = 0;        // the item of the job file it came from, 1-based
    QString type;           // cone | ptd-chart | profile-chart | prior-heatmap | table | ptd | freqs | attention
    QString output;         // relative to the output directory
    QStringList flags;      // CLI-style flags, e.g. {"--alpha", "0.25"}
    QJsonObject parameters; // the item's own parameters (defaults merged, sweep values filled in)
    QString error;          // set when the item is malformed; the runner reports it and moves on
};

// Reads a job: {"defaults": {...}, "items": [{"type": ..., "output": ..., params..., "sweep": {...}}]}.
// Parameter keys are the CLI flags without "--" (layout, scheme, alpha, radius, ...); true adds a switch,
// arrays are comma-joined; "param.NAME": V sets a Python scheme's parameter (--param NAME=V). "sweep" maps parameter names to {"from","to","step"} or a list of values;
// several names sweep their Cartesian product, and "{name}" in the output is replaced by the value.
// Throws JobError if the file is unreadable or not a job; a bad item becomes an item with `error` set.
std::vector<BatchItem> readJob(const QString& path);
// The same for the bytes of a job file; `path` names it in errors.
std::vector<BatchItem> parseJob(const QByteArray& bytes, const QString& path);

// The Python scheme files an item would run (its scheme, or .py entries of its schemes list).
QStringList pythonFilesOf(const BatchItem& item);

// Items of shard i of n (0-based i): every n-th item starting at i.
std::vector<BatchItem> shard(const std::vector<BatchItem>& items, int i, int n);

// The largest number of items a job may expand to.
constexpr int kMaxBatchItems = 100000;

} // namespace ropescope::batch

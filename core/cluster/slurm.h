#pragma once
// Slurm through its own commands (sbatch, squeue), never a scheduler of ours: the job script a sharded run
// submits, the submission of its array and merge, and what the queue holds of them.
#include "core/cluster/sbatch_options.h"
#include "core/cluster/sharded_run.h"

#include <QMap>
#include <QString>
#include <QStringList>

#include <vector>

namespace ropescope::cluster {

// The one script of a run: with SLURM_ARRAY_TASK_ID it runs that shard (the run's arguments, then
// `shardTail`, where kShardIndex stands for the task id), with the argument `merge` the merge (`mergeArgs`).
// Its header says how to submit it by hand; `--slurm-args` are its #SBATCH line. Throws RunError, before
// anything is written, when a path or argument could not go into it safely (checkScriptInputs) or the
// --slurm-args are refused (parseSlurmArgs).
constexpr char kShardIndex[] = "{shard}";
QString jobScript(const ShardedRun& run, const QString& output, const QStringList& shardTail, const QStringList& mergeArgs);

// The path of `sbatch` on PATH, or "" (the message then says so).
QString findSbatch();

// Submits the script's array for `shards` (none: the merge alone) and the merge after it (afterok, and
// cancelled if a shard fails). Throws RunError with sbatch's own words when it refuses.
Submission submit(const ShardedRun& run, const QString& output, const std::vector<int>& shards);

// The queue's view of the run's recorded jobs: array task -> state word ("PENDING", "RUNNING", ...), and the
// merge job's state ("" when not queued). Empty when squeue is not there or cannot reach the controller.
struct QueueView {
    bool available = false;
    QMap<int, QString> shards;
    QString merge;
};
QueueView readQueue(const ShardedRun& run);

// Shell-quotes one argument for a bash script ('...').
QString shellQuote(const QString& arg);

} // namespace ropescope::cluster

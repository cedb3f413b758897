#pragma once
// `--slurm N`, `--resume DIR` and `--status DIR` for the commands that split into shards (bias, batch, eval):
// what is common to them all, around core/cluster. Each command says where its shard writes, what a complete
// shard is and how its merge is called.
#include "core/cluster/sharded_run.h"

#include <QCommandLineParser>
#include <QString>
#include <QStringList>

#include <functional>

namespace ropescope::cli {

struct ShardedCommand {
    QString kind; // "bias", "batch", "eval"
    // The shard's own flags after the run's arguments (cluster::kShardIndex stands for the task id).
    std::function<QStringList(const QString& output, int shards)> shardTail;
    // The merge job's arguments (after the program), writing the result into `output`.
    std::function<QStringList(const QString& output)> mergeArgs;
    // Whether shard `shard` of `shards` has all its files (read from the folder, never trusted blindly).
    std::function<bool(const QString& output, int shard, int shards)> complete;
    // Whether `output` holds the merged result of all `shards`.
    std::function<bool(const QString& output, int shards)> merged;
    // Checks what can be checked before anything is submitted (sample counts, model folder, schemes);
    // returns how many shards at most the measurement splits into. Throws UsageError.
    std::function<int64_t(const QCommandLineParser& parser)> validate;
};

// --slurm, --slurm-args, --dry-run, --resume and --status.
void addShardedOptions(QCommandLineParser& parser, const QString& kind);
bool wantsSharding(const QCommandLineParser& parser); // any of them given
// Runs whichever was asked for; `args` are the command's own arguments as typed. Returns the exit code.
int runSharded(const QCommandLineParser& parser, const QStringList& args, const ShardedCommand& command);

// The shards of `output` that are not complete (for a merge that must refuse an incomplete set).
std::vector<int> incompleteShards(const QString& output, int shards, const ShardedCommand& command);
// The --slurm run in `output` that its merge job merges: UsageError for a folder that is not `command`'s run,
// Failure naming the shards that are not complete (`complete`: what a complete shard holds, in words), unless
// `allowPartial` (--allow-partial: the caller merges the complete ones, and says so) and one is complete.
cluster::ShardedRun runToMerge(const QString& output, const ShardedCommand& command, const QString& complete, bool allowPartial = false);

} // namespace ropescope::cli

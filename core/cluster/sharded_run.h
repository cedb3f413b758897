#pragma once
// A measurement split into shards that a scheduler runs (`--slurm N`): the record kept in its output folder
// (sharded_run.json), which folder each shard writes, and where each shard stands. Qt Core only; the
// command that owns the run says what a complete shard is (for `bias`, a bias_state.json holding exactly
// that shard's samples).
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <stdexcept>
#include <vector>

namespace ropescope::cluster {

// Bad or foreign run folders, and a scheduler that refuses: the message names the folder or the command.
class RunError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

constexpr char kRunFile[] = "sharded_run.json";
constexpr char kScriptFile[] = "slurm_job.sh";
constexpr int kMaxShards = 10000; // Slurm's default MaxArraySize is 1001; sites raise it, not this far

struct Submission {
    QString arrayJob;        // Slurm's job id of the shards' array ("" for a merge submitted alone)
    QString mergeJob;        // the merge job's id
    std::vector<int> shards; // the array's task ids
    QString submittedAt;     // ISO 8601, UTC
};

struct ShardedRun {
    QString kind; // the command: "bias", "batch" or "eval"
    int shards = 0;
    QString program;       // the absolute path of the ropescope that submitted it (the nodes run it too)
    QStringList shardArgs; // the command's arguments, less --output, --shard and the --slurm flags
    QString workingDir;    // relative paths in shardArgs are relative to it
    QString slurmArgs;     // passed through to sbatch (partition, time, memory, GPUs, account)
    std::vector<Submission> submissions;

    QJsonObject toJson() const;
    static ShardedRun fromJson(const QJsonObject& json, const QString& name); // throws RunError naming `name`
    bool sameMeasurement(const ShardedRun& other) const;                      // kind, shards, program, arguments and folder
};

// `output`/sharded_run.json; RunError when absent ("is not a sharded run") or malformed.
ShardedRun readRun(const QString& output);
bool isShardedRun(const QString& output);
void writeRun(const QString& output, const ShardedRun& run); // atomically; RunError on failure
QString shardFolder(const QString& output, int shard);       // output/shards/<shard>
QString shardLog(const QString& output, int shard);          // output/logs/shard-<shard>.log
QString mergeLog(const QString& output);                     // output/logs/merge.log

enum class ShardState { Done, Running, Pending, Failed, Missing };
const char* shardStateName(ShardState state);

// Where each shard stands: Done when `complete(shard)` says its files are there; else Running or Pending
// when the scheduler (`queued`: shard -> Slurm state word) has it; else Failed when it left a log, Missing
// when it never started.
std::vector<ShardState> shardStates(const QString& output, int shards, const std::function<bool(int)>& complete,
                                    const std::function<QString(int)>& queued);
// "1, 3 and 7" (as shard indices are listed to users).
QString listShards(const std::vector<int>& shards);

} // namespace ropescope::cluster

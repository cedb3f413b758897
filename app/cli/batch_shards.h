#pragma once
// A batch job as a --slurm run: each shard renders its items straight into OUTPUT (items name their own
// files, so shards never collide) with its own manifest.shard-i-of-n.json; the merge checks every shard's
// manifest and files and writes manifest.json for the whole job.
#include "app/cli/sharded_command.h"

#include <QString>

#include <vector>

namespace ropescope::batch {
struct BatchItem;
}

namespace ropescope::cli {

QString shardManifestName(int shard, int shards); // manifest.shard-<i>-of-<n>.json
// Whether OUTPUT holds shard `shard` of `shards` of `job` (any job when empty), complete, with every item
// written and its file there.
bool batchShardComplete(const QString& output, int shard, int shards, const QString& job = {});
ShardedCommand shardedBatch();
// `batch --merge --output OUTPUT` on a --slurm run: manifest.json from the shards' manifests, or a Failure
// naming the shards that are not complete.
int mergeBatchShards(const QString& output);
// A job file is not the user's command line: an item naming a Python scheme, whose code would run, is refused
// (UsageError naming the item and the file) unless --trust-python was given.
void refusePythonItems(const std::vector<batch::BatchItem>& items);

} // namespace ropescope::cli

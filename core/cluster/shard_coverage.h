#pragma once
// Which samples of a stream a set of shard results covers, for a merge that must refuse an incomplete set
// (issue 54): a merge of shards 0, 1 and 3 of 4 is three quarters of the data, not the measurement. When
// every input is one whole shard of one split (--shard i/n: the samples k < total with k mod n = i), the
// missing ones are named as shards of that split; otherwise as the samples no input holds.
#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <vector>

namespace ropescope::cluster {

struct Coverage {
    int64_t total = 0;                   // samples in the whole stream
    int64_t measured = 0;                // samples the inputs hold
    int shards = 0;                      // n of the split the inputs are whole shards of; 0 when they are not
    std::vector<int> missingShards;      // of that split, ascending
    std::vector<int64_t> missingSamples; // the first kListed of them, ascending
    int64_t missingCount = 0;

    static constexpr int kListed = 8;
    bool complete() const { return missingCount == 0; }
    // "shard 2 of 4 is missing (4 of 16 samples)", "shards 1 and 3 of 4 are missing (...)", or
    // "4 of 16 samples are missing (2, 6, 10 and 14)" when the inputs are not whole shards of one split.
    QString describe() const;
    // {"samples", "stream_samples", "missing_samples", "shards", "missing_shards"} for a report that merged
    // an incomplete set on purpose.
    QJsonObject toJson() const;
};

// `inputs`: each input's sample indices (each in [0, total), none in two inputs, as a merge has checked).
// `knownShards`: the split when the caller knows it (a --slurm run's record), else 0 to infer it.
Coverage shardCoverage(const std::vector<std::vector<int64_t>>& inputs, int64_t total, int knownShards = 0);

} // namespace ropescope::cluster

#include "core/cluster/shard_coverage.h"

#include "core/cluster/sharded_run.h"

#include <QJsonArray>
#include <QStringList>

#include <algorithm>
#include <set>

namespace ropescope::cluster {
namespace {

// How many samples shard i of n holds: the k < total with k mod n = i.
int64_t shardSize(int64_t total, int64_t i, int64_t n)
{
    return total > i ? (total - i + n - 1) / n : 0;
}

// Whether every input is exactly one shard of n, each a different one.
bool wholeShards(const std::vector<std::vector<int64_t>>& sorted, int64_t total, int64_t n)
{
    std::set<int64_t> seen;
    for (const std::vector<int64_t>& s : sorted) {
        if (s.empty() || s.front() >= n || !seen.insert(s.front()).second ||
            static_cast<int64_t>(s.size()) != shardSize(total, s.front(), n))
            return false;
        for (size_t k = 0; k < s.size(); ++k)
            if (s[k] != s.front() + static_cast<int64_t>(k) * n)
                return false;
    }
    return true;
}

// The split the inputs are whole shards of: a shard of n with two samples or more steps by n; when each
// input holds one sample, the smallest n for which that sample is its whole shard. 0 when none fits.
int64_t inferSplit(const std::vector<std::vector<int64_t>>& sorted, int64_t total)
{
    int64_t n = 0;
    for (const std::vector<int64_t>& s : sorted)
        if (s.size() >= 2) {
            n = s[1] - s[0];
            break;
        }
    if (n == 0)
        for (const std::vector<int64_t>& s : sorted)
            if (!s.empty())
                n = std::max({n, total - s.front(), s.front() + 1});
    return n >= 1 && n <= kMaxShards && wholeShards(sorted, total, n) ? n : 0;
}

// "2, 6, 10 and 14", or the first kListed and how many more.
template <class T> QString listed(const std::vector<T>& values, int64_t count)
{
    QStringList words;
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(Coverage::kListed); ++i)
        words << QString::number(values[i]);
    if (count > static_cast<int64_t>(words.size()))
        return words.join(", ") + QString(" and %1 more").arg(count - words.size());
    if (words.size() <= 1)
        return words.join("");
    const QString last = words.takeLast();
    return words.join(", ") + " and " + last;
}

} // namespace

QString Coverage::describe() const
{
    if (complete())
        return QString("all %1 samples").arg(total);
    const QString samples = QString("%1 of %2 samples").arg(missingCount).arg(total);
    if (shards > 0) {
        const bool one = missingShards.size() == 1;
        return QString("shard%1 %2 of %3 %4 missing (%5)")
            .arg(one ? "" : "s", listed(missingShards, static_cast<int64_t>(missingShards.size())))
            .arg(shards)
            .arg(one ? "is" : "are", samples);
    }
    return QString("%1 %2 missing (%3), and the inputs are not whole shards of one --shard i/n split")
        .arg(samples, missingCount == 1 ? "is" : "are", listed(missingSamples, missingCount));
}

QJsonObject Coverage::toJson() const
{
    QJsonObject json{{"samples", static_cast<double>(measured)},
                     {"stream_samples", static_cast<double>(total)},
                     {"missing_samples", static_cast<double>(missingCount)}};
    if (shards > 0) {
        QJsonArray missing;
        for (int i : missingShards)
            missing.append(i);
        json["shards"] = shards;
        json["missing_shards"] = missing;
    }
    return json;
}

Coverage shardCoverage(const std::vector<std::vector<int64_t>>& inputs, int64_t total, int knownShards)
{
    Coverage c;
    c.total = total;
    std::vector<std::vector<int64_t>> sorted = inputs;
    std::vector<bool> held(static_cast<size_t>(std::max<int64_t>(total, 0)));
    for (std::vector<int64_t>& s : sorted) {
        std::sort(s.begin(), s.end());
        for (int64_t k : s)
            if (k >= 0 && k < total && !held[static_cast<size_t>(k)]) {
                held[static_cast<size_t>(k)] = true;
                ++c.measured;
            }
    }
    for (int64_t k = 0; k < total; ++k)
        if (!held[static_cast<size_t>(k)]) {
            if (c.missingSamples.size() < static_cast<size_t>(Coverage::kListed))
                c.missingSamples.push_back(k);
            ++c.missingCount;
        }
    const int64_t n = knownShards > 0 && wholeShards(sorted, total, knownShards) ? knownShards : inferSplit(sorted, total);
    if (n > 0) {
        c.shards = static_cast<int>(n);
        std::vector<bool> present(static_cast<size_t>(n));
        for (const std::vector<int64_t>& s : sorted)
            present[static_cast<size_t>(s.front())] = true;
        for (int64_t i = 0; i < n; ++i)
            if (!present[static_cast<size_t>(i)] && shardSize(total, i, n) > 0)
                c.missingShards.push_back(static_cast<int>(i));
    }
    return c;
}

} // namespace ropescope::cluster

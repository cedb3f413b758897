#include "app/cli/batch_shards.h"

#include "app/batch/batch_job.h"
#include "app/cli/cli_error.h"
#include "core/cluster/slurm.h"
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace ropescope::cli {
namespace {

std::optional<QJsonObject> readManifest(const QString& path)
{
    if (!QFileInfo(path).isFile())
        return std::nullopt;
    try {
        const QJsonDocument doc = QJsonDocument::fromJson(io::readInputFile(path, int64_t(256) << 20, "batch manifest"));
        if (doc.isObject())
            return doc.object();
    } catch (const io::IoError&) { }
    return std::nullopt;
}

} // namespace

QString shardManifestName(int shard, int shards)
{
    return QString("manifest.shard-%1-of-%2.json").arg(shard).arg(shards);
}

bool batchShardComplete(const QString& output, int shard, int shards, const QString& job)
{
    const std::optional<QJsonObject> m = readManifest(QDir(output).filePath(shardManifestName(shard, shards)));
    if (!m || !m->value("complete").toBool() || m->value("failed").toInt(-1) != 0 || (!job.isEmpty() && m->value("job").toString() != job))
        return false;
    const QJsonArray items = m->value("items").toArray();
    if (items.size() != m->value("items_total").toInt(-1))
        return false;
    for (const QJsonValue& v : items) {
        const QJsonObject item = v.toObject();
        const QString file = item.value("output").toString();
        if (item.value("status").toString() != "ok" || file.isEmpty() || file.contains("..") || QDir::isAbsolutePath(file) ||
            !QFileInfo(QDir(output).filePath(file)).isFile())
            return false;
    }
    return true;
}

void refusePythonItems(const std::vector<batch::BatchItem>& items)
{
    for (const batch::BatchItem& item : items)
        if (const QStringList files = batch::pythonFilesOf(item); !files.isEmpty())
            throw UsageError(QString("item %1 names the Python scheme %2, whose code would run: pass --trust-python to allow it")
                                 .arg(item.jobItem)
                                 .arg(files.first())
                                 .toStdString());
}

int mergeBatchShards(const QString& output)
{
    const cluster::ShardedRun run = runToMerge(output, shardedBatch(), "no manifest.shard-<i>-of-<n>.json with every item written");
    QJsonArray items;
    QString job;
    for (int i = 0; i < run.shards; ++i) {
        const QJsonObject m = *readManifest(QDir(output).filePath(shardManifestName(i, run.shards)));
        job = m.value("job").toString();
        for (const QJsonValue& v : m.value("items").toArray())
            items.append(v);
    }
    std::vector<QJsonValue> sorted(items.begin(), items.end()); // the job's order, as one process writes it
    std::stable_sort(sorted.begin(), sorted.end(), [](const QJsonValue& a, const QJsonValue& b) {
        return a.toObject().value("index").toInt() < b.toObject().value("index").toInt();
    });
    QJsonArray ordered;
    for (const QJsonValue& v : sorted)
        ordered.append(v);
    const QJsonObject root{{"job", job},
                           {"shard", QString("all %1").arg(run.shards)},
                           {"complete", true},
                           {"items_total", ordered.size()},
                           {"written", ordered.size()},
                           {"failed", 0},
                           {"items", ordered}};
    try {
        io::writeFileInside(output, "manifest.json", QJsonDocument(root).toJson());
    } catch (const io::IoError& e) {
        throw Failure(e.what());
    }
    std::printf("batch: merged %lld items from %d shards; manifest %s\n", static_cast<long long>(ordered.size()), run.shards,
                qPrintable(QDir(output).filePath("manifest.json")));
    return 0;
}

ShardedCommand shardedBatch()
{
    ShardedCommand c;
    c.kind = "batch";
    c.shardTail = [](const QString& output, int shards) {
        return QStringList{"--shard", QString(cluster::kShardIndex) + "/" + QString::number(shards), "--output", output, "--skip-complete"};
    };
    c.mergeArgs = [](const QString& output) { return QStringList{"batch", "--merge", "--output", output}; };
    c.complete = [](const QString& output, int shard, int shards) { return batchShardComplete(output, shard, shards); };
    c.merged = [](const QString& output, int shards) {
        const std::optional<QJsonObject> m = readManifest(QDir(output).filePath("manifest.json"));
        return m && m->value("complete").toBool() && m->value("shard").toString() == QString("all %1").arg(shards);
    };
    c.validate = [](const QCommandLineParser& parser) -> int64_t {
        if (parser.positionalArguments().size() != 1)
            throw UsageError("expected one job file: ropescope batch JOB.json --slurm N --output DIR");
        std::vector<batch::BatchItem> items;
        try {
            items = batch::readJob(parser.positionalArguments().first());
        } catch (const batch::JobError& e) {
            throw UsageError(e.what());
        }
        for (const batch::BatchItem& item : items) // a bad item would fail on its node, after the queue's wait
            if (!item.error.isEmpty())
                throw UsageError(item.error.toStdString());
        if (!parser.isSet("trust-python")) // or every shard would be refused on its node
            refusePythonItems(items);
        return static_cast<int64_t>(items.size());
    };
    return c;
}

} // namespace ropescope::cli

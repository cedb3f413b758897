#include "core/cluster/sharded_run.h"

#include "core/cluster/script_text.h"
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

namespace ropescope::cluster {
namespace {

constexpr int kFormat = 1;

QString stringField(const QJsonObject& json, const char* key, const QString& name, bool required = true)
{
    const QJsonValue v = json.value(key);
    if (v.isUndefined() && !required)
        return {};
    if (!v.isString() || v.toString().size() > 65536)
        throw RunError(name.toStdString() + ": '" + key + "' is missing or not a string");
    return v.toString();
}

} // namespace

QJsonObject ShardedRun::toJson() const
{
    QJsonArray subs;
    for (const Submission& s : submissions) {
        QJsonArray ids;
        for (int i : s.shards)
            ids.append(i);
        subs.append(QJsonObject{{"array_job", s.arrayJob}, {"merge_job", s.mergeJob}, {"shards", ids}, {"submitted_at", s.submittedAt}});
    }
    return QJsonObject{{"format", kFormat},
                       {"kind", kind},
                       {"shards", shards},
                       {"program", program},
                       {"arguments", QJsonArray::fromStringList(shardArgs)},
                       {"working_dir", workingDir},
                       {"slurm_args", slurmArgs},
                       {"submissions", subs}};
}

ShardedRun ShardedRun::fromJson(const QJsonObject& json, const QString& name)
{
    if (json.value("format").toInt() != kFormat)
        throw RunError(name.toStdString() + ": not a sharded-run record of this RopeScope (format " + std::to_string(kFormat) + ")");
    ShardedRun run;
    run.kind = stringField(json, "kind", name);
    if (run.kind != "bias" && run.kind != "batch" && run.kind != "eval")
        throw RunError(name.toStdString() + ": unknown kind '" + printable(run.kind.left(40)).toStdString() + "'");
    const QJsonValue shards = json.value("shards");
    if (!shards.isDouble() || shards.toDouble() != static_cast<double>(shards.toInt()) || shards.toInt() < 1 || shards.toInt() > kMaxShards)
        throw RunError(name.toStdString() + ": 'shards' must be a whole number 1.." + std::to_string(kMaxShards));
    run.shards = shards.toInt();
    run.program = stringField(json, "program", name);
    run.workingDir = stringField(json, "working_dir", name);
    run.slurmArgs = stringField(json, "slurm_args", name, false);
    const QJsonValue args = json.value("arguments");
    if (!args.isArray() || args.toArray().size() > 1000)
        throw RunError(name.toStdString() + ": 'arguments' must be a list of strings");
    for (const QJsonValue& a : args.toArray()) {
        if (!a.isString())
            throw RunError(name.toStdString() + ": 'arguments' must be a list of strings");
        run.shardArgs << a.toString();
    }
    const QJsonValue subs = json.value("submissions");
    if (!subs.isUndefined() && (!subs.isArray() || subs.toArray().size() > 10000))
        throw RunError(name.toStdString() + ": 'submissions' must be a list");
    for (const QJsonValue& v : subs.toArray()) {
        if (!v.isObject())
            throw RunError(name.toStdString() + ": a submission is not an object");
        const QJsonObject o = v.toObject();
        Submission s;
        s.arrayJob = stringField(o, "array_job", name);
        s.mergeJob = stringField(o, "merge_job", name);
        // Slurm's job ids are numbers; they are printed and handed to scancel in messages.
        static const QRegularExpression nonDigit("[^0-9]");
        for (const QString& id : {s.arrayJob, s.mergeJob})
            if (id.size() > 20 || id.contains(nonDigit))
                throw RunError(name.toStdString() + ": a submission's job id '" + printable(id.left(40)).toStdString() +
                               "' is not a Slurm job number");
        s.submittedAt = stringField(o, "submitted_at", name, false);
        const QJsonValue ids = o.value("shards");
        if (!ids.isArray() || ids.toArray().size() > kMaxShards)
            throw RunError(name.toStdString() + ": a submission's 'shards' must be a list");
        for (const QJsonValue& id : ids.toArray()) {
            const int i = id.toInt(-1);
            if (!id.isDouble() || i < 0 || i >= run.shards)
                throw RunError(name.toStdString() + ": a submission names a shard outside 0.." + std::to_string(run.shards - 1));
            s.shards.push_back(i);
        }
        run.submissions.push_back(std::move(s));
    }
    return run;
}

bool ShardedRun::sameMeasurement(const ShardedRun& other) const
{
    return kind == other.kind && shards == other.shards && program == other.program && shardArgs == other.shardArgs &&
        workingDir == other.workingDir;
}

bool isShardedRun(const QString& output)
{
    return QFileInfo(QDir(output).filePath(kRunFile)).isFile();
}

ShardedRun readRun(const QString& output)
{
    const QString path = QDir(output).filePath(kRunFile);
    if (!QFileInfo(output).isDir())
        throw RunError(output.toStdString() + ": no such folder");
    if (!QFileInfo(path).exists())
        throw RunError(output.toStdString() + " is not a sharded run (it has no " + kRunFile + "; one is written by --slurm N)");
    try {
        return ShardedRun::fromJson(io::readJsonObjectFile(path, 4 << 20, "sharded-run record"), path);
    } catch (const io::IoError& e) {
        throw RunError(e.what());
    }
}

void writeRun(const QString& output, const ShardedRun& run)
{
    try {
        io::writeFileInside(output, kRunFile, QJsonDocument(run.toJson()).toJson());
    } catch (const io::IoError& e) {
        throw RunError(e.what());
    }
}

QString shardFolder(const QString& output, int shard)
{
    return QDir(output).filePath(QString("shards/%1").arg(shard));
}

QString shardLog(const QString& output, int shard)
{
    return QDir(output).filePath(QString("logs/shard-%1.log").arg(shard));
}

QString mergeLog(const QString& output)
{
    return QDir(output).filePath("logs/merge.log");
}

const char* shardStateName(ShardState state)
{
    switch (state) {
    case ShardState::Done: return "done";
    case ShardState::Running: return "running";
    case ShardState::Pending: return "pending";
    case ShardState::Failed: return "failed";
    case ShardState::Missing: return "missing";
    }
    return "?";
}

std::vector<ShardState> shardStates(const QString& output, int shards, const std::function<bool(int)>& complete,
                                    const std::function<QString(int)>& queued)
{
    std::vector<ShardState> states;
    states.reserve(static_cast<size_t>(shards));
    for (int i = 0; i < shards; ++i) {
        const QString q = queued ? queued(i) : QString();
        if (complete(i))
            states.push_back(ShardState::Done);
        else if (q == "RUNNING" || q == "COMPLETING" || q == "CONFIGURING")
            states.push_back(ShardState::Running);
        else if (!q.isEmpty() && q != "FAILED" && q != "CANCELLED" && q != "TIMEOUT" && q != "OUT_OF_MEMORY" && q != "NODE_FAIL" &&
                 q != "COMPLETED")
            states.push_back(ShardState::Pending);
        else
            states.push_back(QFileInfo::exists(shardLog(output, i)) ? ShardState::Failed : ShardState::Missing);
    }
    return states;
}

QString listShards(const std::vector<int>& shards)
{
    QStringList words;
    for (int i : shards)
        words << QString::number(i);
    if (words.size() <= 1)
        return words.join("");
    const QString last = words.takeLast();
    return words.join(", ") + " and " + last;
}

} // namespace ropescope::cluster

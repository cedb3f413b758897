#include "app/cli/sharded_command.h"

#include "app/cli/cli_error.h"
#include "core/cluster/script_text.h"
#include "core/cluster/slurm.h"
#include "core/io/atomic_file.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cstdio>

namespace ropescope::cli {
namespace {

// The run's own flags, which the shards and the merge must not repeat.
const QStringList kValueFlags{"output", "shard", "slurm", "slurm-args", "resume", "status"};
const QStringList kBoolFlags{"dry-run", "skip-complete", "merge"};

// The command's arguments as typed, less the flags the run sets per shard (both "--flag V" and "--flag=V").
QStringList shardArguments(const QStringList& args)
{
    QStringList kept;
    for (qsizetype i = 0; i < args.size(); ++i) {
        const QString& a = args[i];
        if (a == "--") {
            kept << args.mid(i);
            break;
        }
        const QString name = a.startsWith("--") ? a.mid(2) : a.startsWith('-') ? a.mid(1) : QString();
        const QString key = name.section('=', 0, 0);
        if (!name.isEmpty() && kValueFlags.contains(key)) {
            if (!name.contains('='))
                ++i; // and its value
            continue;
        }
        if (!name.isEmpty() && kBoolFlags.contains(key))
            continue;
        kept << a;
    }
    return kept;
}

QString absolute(const QString& path)
{
    return QDir::cleanPath(QFileInfo(path).absoluteFilePath());
}

std::vector<int> allShards(int shards)
{
    std::vector<int> all(static_cast<size_t>(shards));
    for (int i = 0; i < shards; ++i)
        all[static_cast<size_t>(i)] = i;
    return all;
}

cluster::ShardedRun readRunOrThrow(const QString& output, const ShardedCommand& command)
{
    try {
        cluster::ShardedRun run = cluster::readRun(output);
        if (run.kind != command.kind)
            throw UsageError(output.toStdString() + " is a sharded " + run.kind.toStdString() + " run, not " + command.kind.toStdString() +
                             ": use `ropescope " + run.kind.toStdString() + "` on it");
        return run;
    } catch (const cluster::RunError& e) {
        throw UsageError(e.what());
    }
}

void printSubmission(const QString& output, const cluster::ShardedRun& run, const cluster::Submission& s)
{
    if (!s.arrayJob.isEmpty())
        std::printf("%s: submitted %zu of %d shards as Slurm job %s, and the merge as job %s (after every shard succeeds)\n",
                    qPrintable(run.kind), s.shards.size(), run.shards, qPrintable(s.arrayJob), qPrintable(s.mergeJob));
    else
        std::printf("%s: every shard is done; submitted the merge as Slurm job %s\n", qPrintable(run.kind), qPrintable(s.mergeJob));
    std::printf("  watch: ropescope %s --status %s   (or: squeue --me)\n", qPrintable(run.kind),
                qPrintable(cluster::printable(cluster::shellQuote(output))));
    std::printf("  logs:  %s\n", qPrintable(cluster::printable(QDir(output).filePath("logs"))));
}

cluster::Submission submitOrThrow(const cluster::ShardedRun& run, const QString& output, const std::vector<int>& shards)
{
    try {
        return cluster::submit(run, output, shards);
    } catch (const cluster::RunError& e) {
        throw Failure(e.what());
    }
}

// What is in a folder that is about to hold a new run, for the refusal ("holds bias_state.json, shards").
QString contentsOf(const QString& output)
{
    const QStringList entries = QDir(output).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System, QDir::Name);
    QStringList shown = entries.mid(0, 3);
    if (entries.size() > 3)
        shown << QString("%1 more").arg(entries.size() - 3);
    return shown.join(", ");
}

int submitNew(const QCommandLineParser& parser, const QStringList& args, const ShardedCommand& command)
{
    for (const char* flag : {"shard", "merge", "skip-complete"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": not with --slurm (the run gives each shard its own)");
    if (!parser.isSet("output"))
        throw UsageError("--output DIR is required");
    bool ok = false;
    const int shards = parser.value("slurm").toInt(&ok);
    if (!ok || shards < 1 || shards > cluster::kMaxShards)
        throw UsageError("--slurm: expected a number of shards 1.." + std::to_string(cluster::kMaxShards) + ", got '" +
                         parser.value("slurm").toStdString() + "'");
    cluster::ShardedRun run;
    run.kind = command.kind;
    run.shards = shards;
    run.program = absolute(QCoreApplication::applicationFilePath());
    run.shardArgs = QStringList{command.kind} + shardArguments(args.mid(1)); // args[0] is the parser's program label
    run.workingDir = absolute(QDir::currentPath());
    run.slurmArgs = parser.value("slurm-args");
    const QString output = absolute(parser.value("output"));
    try { // every path and argument the script will name, before a file is read or written
        cluster::checkScriptInputs(run, output);
        cluster::parseSlurmArgs(run.slurmArgs);
    } catch (const cluster::RunError& e) {
        throw UsageError(e.what());
    }
    const int64_t most = command.validate(parser);
    if (shards > most)
        throw UsageError(
            QString("--slurm %1: the measurement has %2 parts to split; give at most %2 shards").arg(shards).arg(most).toStdString());
    const bool dryRun = parser.isSet("dry-run");
    if (!dryRun && cluster::findSbatch().isEmpty())
        throw UsageError(
            "--slurm: sbatch is not on PATH, so nothing can be submitted to Slurm here (--dry-run writes the job script only)");

    if (cluster::isShardedRun(output)) {
        cluster::ShardedRun existing = readRunOrThrow(output, command);
        if (existing.sameMeasurement(run))
            throw UsageError(output.toStdString() + " already holds this sharded run: `ropescope " + command.kind.toStdString() +
                             " --status` says where it stands, `--resume` reruns what is not done");
        throw UsageError(output.toStdString() + " holds another measurement (" + cluster::kRunFile + ": " + existing.kind.toStdString() +
                         " in " + std::to_string(existing.shards) + " shards); give a new folder");
    }
    if (QFileInfo(output).exists() && !QFileInfo(output).isDir())
        throw UsageError("--output " + output.toStdString() + ": not a folder");
    if (const QString inside = contentsOf(output); !inside.isEmpty())
        throw UsageError("--output " + output.toStdString() + " holds another measurement or other files (" + inside.toStdString() +
                         "); give a new or empty folder");
    if (!QDir().mkpath(output))
        throw Failure(output.toStdString() + ": cannot create the folder");
    QString script;
    try {
        script = cluster::jobScript(run, output, command.shardTail(output, shards), command.mergeArgs(output));
    } catch (const cluster::RunError& e) {
        throw UsageError(e.what());
    }
    try {
        io::writeFileInside(output, cluster::kScriptFile, script.toUtf8());
        QFile::setPermissions(QDir(output).filePath(cluster::kScriptFile),
                              QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup |
                                  QFile::ReadOther | QFile::ExeOther);
        cluster::writeRun(output, run);
    } catch (const std::exception& e) {
        throw Failure(e.what());
    }
    if (dryRun) {
        std::printf("%s: wrote %s for %d shards (not submitted; its header says how to submit it)\n", qPrintable(command.kind),
                    qPrintable(QDir(output).filePath(cluster::kScriptFile)), shards);
        return 0;
    }
    const cluster::Submission s = submitOrThrow(run, output, allShards(shards));
    run.submissions.push_back(s);
    try {
        cluster::writeRun(output, run);
    } catch (const cluster::RunError& e) {
        throw Failure(std::string(e.what()) + " (jobs " + s.arrayJob.toStdString() + " and " + s.mergeJob.toStdString() +
                      " were submitted)");
    }
    printSubmission(output, run, s);
    return 0;
}

struct Standing {
    std::vector<cluster::ShardState> states;
    cluster::QueueView queue;
};

Standing standing(const QString& output, const cluster::ShardedRun& run, const ShardedCommand& command)
{
    Standing st;
    st.queue = cluster::readQueue(run);
    st.states = cluster::shardStates(
        output, run.shards, [&](int i) { return command.complete(output, i, run.shards); },
        [&](int i) { return st.queue.shards.value(i); });
    return st;
}

std::vector<int> inState(const Standing& st, std::initializer_list<cluster::ShardState> wanted)
{
    std::vector<int> shards;
    for (size_t i = 0; i < st.states.size(); ++i)
        for (cluster::ShardState w : wanted)
            if (st.states[i] == w)
                shards.push_back(static_cast<int>(i));
    return shards;
}

int printStatus(const QString& given, const ShardedCommand& command)
{
    const QString output = absolute(given);
    const cluster::ShardedRun run = readRunOrThrow(output, command);
    const Standing st = standing(output, run, command);
    // The record is a file anyone may have edited: what it says is printed with its control characters escaped.
    std::printf("%s: %s in %d shards", qPrintable(cluster::printable(output)), qPrintable(run.kind), run.shards);
    if (run.submissions.empty())
        std::printf(", never submitted (--resume submits it)\n");
    else
        std::printf(", last submitted %s (shards: job %s, merge: job %s)\n",
                    qPrintable(cluster::printable(run.submissions.back().submittedAt)),
                    qPrintable(run.submissions.back().arrayJob.isEmpty() ? QString("-") : run.submissions.back().arrayJob),
                    qPrintable(run.submissions.back().mergeJob));
    using S = cluster::ShardState;
    std::printf("  done %zu, running %zu, pending %zu, failed %zu, missing %zu\n", inState(st, {S::Done}).size(),
                inState(st, {S::Running}).size(), inState(st, {S::Pending}).size(), inState(st, {S::Failed}).size(),
                inState(st, {S::Missing}).size());
    if (const auto failed = inState(st, {S::Failed}); !failed.empty())
        std::printf("  failed: %s (logs: %s)\n", qPrintable(cluster::listShards(failed)),
                    qPrintable(cluster::printable(QDir(output).filePath("logs/shard-<i>.log"))));
    if (const auto missing = inState(st, {S::Missing}); !missing.empty())
        std::printf("  missing: %s (never ran, or cancelled before it started)\n", qPrintable(cluster::listShards(missing)));
    QString merge;
    if (command.merged(output, run.shards))
        merge = "done, the result is in " + output;
    else if (!st.queue.merge.isEmpty())
        merge = "queued (" + st.queue.merge.toLower() + ")";
    else if (QFileInfo::exists(cluster::mergeLog(output)))
        merge = "ran and failed (" + cluster::mergeLog(output) + ")";
    else
        merge = "not run";
    std::printf("  merge: %s\n", qPrintable(cluster::printable(merge)));
    if (!st.queue.available)
        std::printf("  (squeue did not answer: shards still queued show as missing)\n");
    return 0;
}

int resume(const QCommandLineParser& parser, const ShardedCommand& command)
{
    for (const char* flag : {"slurm", "shard", "merge", "skip-complete", "output", "status"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": not with --resume (the run's record in the folder says everything)");
    const QString output = absolute(parser.value("resume"));
    cluster::ShardedRun run = readRunOrThrow(output, command);
    if (parser.isSet("slurm-args")) {
        run.slurmArgs = parser.value("slurm-args");
        try {
            cluster::parseSlurmArgs(run.slurmArgs);
        } catch (const cluster::RunError& e) {
            throw UsageError(e.what());
        }
    }
    if (!QFileInfo(QDir(output).filePath(cluster::kScriptFile)).isFile())
        throw UsageError(QDir(output).filePath(cluster::kScriptFile).toStdString() +
                         " is gone: the run cannot be resubmitted without its job script");
    if (!parser.isSet("dry-run") && cluster::findSbatch().isEmpty())
        throw UsageError("--resume: sbatch is not on PATH, so nothing can be submitted to Slurm here");
    const Standing st = standing(output, run, command);
    using S = cluster::ShardState;
    if (const auto queued = inState(st, {S::Running, S::Pending}); !queued.empty())
        throw Failure(QString("--resume: shard%1 %2 %3 still in Slurm's queue; wait for %4, or scancel %5 first")
                          .arg(queued.size() > 1 ? "s" : "", cluster::listShards(queued), queued.size() > 1 ? "are" : "is",
                               queued.size() > 1 ? "them" : "it", run.submissions.back().arrayJob)
                          .toStdString());
    const std::vector<int> rerun = inState(st, {S::Failed, S::Missing});
    if (rerun.empty() && command.merged(output, run.shards)) {
        std::printf("%s: nothing to resume: all %d shards are done and merged in %s\n", qPrintable(run.kind), run.shards,
                    qPrintable(output));
        return 0;
    }
    if (!st.queue.merge.isEmpty() && rerun.empty())
        throw Failure("--resume: every shard is done and the merge is queued already (job " +
                      run.submissions.back().mergeJob.toStdString() + ")");
    if (parser.isSet("dry-run")) {
        std::printf("%s: would resubmit %s, then the merge (not submitted)\n", qPrintable(run.kind),
                    rerun.empty() ? "no shard" : qPrintable("shards " + cluster::listShards(rerun)));
        return 0;
    }
    const cluster::Submission s = submitOrThrow(run, output, rerun);
    run.submissions.push_back(s);
    try {
        cluster::writeRun(output, run);
    } catch (const cluster::RunError& e) {
        throw Failure(e.what());
    }
    printSubmission(output, run, s);
    return 0;
}

} // namespace

void addShardedOptions(QCommandLineParser& parser, const QString& kind)
{
    parser.addOptions({
        {"slurm",
         QString("Submit the %1 to Slurm as a job array of N shards into OUTPUT/shards/<i>, then a merge job into OUTPUT "
                 "(docs/CLUSTER.md).")
             .arg(kind),
         "N"},
        {"slurm-args", "With --slurm or --resume: sbatch options passed through, e.g. \"--partition=gpu --time=2:00:00 --mem=32G\".",
         "ARGS"},
        {"dry-run", "With --slurm or --resume: write the job script (OUTPUT/slurm_job.sh) and submit nothing."},
        {"resume", "Resubmit the shards of a --slurm run that are missing or failed, then its merge.", "DIR"},
        {"status", "Where the shards of a --slurm run stand: done, running, pending, failed, missing.", "DIR"},
        {"skip-complete",
         "With --shard: leave the shard alone when --output already holds its complete result (what the job "
         "script asks, so a rerun array skips finished shards)."},
    });
}

bool wantsSharding(const QCommandLineParser& parser)
{
    const bool wanted = parser.isSet("slurm") || parser.isSet("resume") || parser.isSet("status");
    for (const char* flag : {"slurm-args", "dry-run"})
        if (parser.isSet(flag) && !wanted)
            throw UsageError(std::string("--") + flag + ": only with --slurm N or --resume DIR");
    return parser.isSet("slurm") || parser.isSet("resume") || parser.isSet("status");
}

int runSharded(const QCommandLineParser& parser, const QStringList& args, const ShardedCommand& command)
{
    if (parser.isSet("slurm") + parser.isSet("resume") + parser.isSet("status") > 1)
        throw UsageError("give one of --slurm N, --resume DIR and --status DIR");
    if (parser.isSet("status")) {
        for (const char* flag : {"output", "slurm-args", "dry-run"})
            if (parser.isSet(flag))
                throw UsageError(std::string("--") + flag + ": not with --status");
        return printStatus(parser.value("status"), command);
    }
    if (parser.isSet("resume"))
        return resume(parser, command);
    return submitNew(parser, args, command);
}

std::vector<int> incompleteShards(const QString& output, int shards, const ShardedCommand& command)
{
    std::vector<int> missing;
    for (int i = 0; i < shards; ++i)
        if (!command.complete(output, i, shards))
            missing.push_back(i);
    return missing;
}

cluster::ShardedRun runToMerge(const QString& output, const ShardedCommand& command, const QString& complete, bool allowPartial)
{
    const cluster::ShardedRun run = readRunOrThrow(output, command);
    const std::vector<int> missing = incompleteShards(output, run.shards, command);
    if (allowPartial && static_cast<int>(missing.size()) == run.shards)
        throw Failure("--merge --allow-partial: no shard of " + output.toStdString() + " is complete yet; there is nothing to merge");
    if (!missing.empty() && !allowPartial)
        throw Failure(QString("--merge: shard%1 %2 of %3 %4 not complete (%5); `ropescope %6 --resume %7` reruns %8")
                          .arg(missing.size() > 1 ? "s" : "", cluster::listShards(missing))
                          .arg(run.shards)
                          .arg(missing.size() > 1 ? "are" : "is", complete, command.kind, cluster::shellQuote(output),
                               missing.size() > 1 ? "them" : "it")
                          .toStdString());
    return run;
}

} // namespace ropescope::cli

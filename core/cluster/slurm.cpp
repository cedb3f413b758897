#include "core/cluster/slurm.h"

#include "core/cluster/script_text.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>

namespace ropescope::cluster {
namespace {

constexpr int kSlurmCommandMs = 60000; // sbatch and squeue answer in well under a second; a dead controller hangs them

// Runs a Slurm client; RunError with its own words when it fails or does not answer.
QString runClient(const QString& program, const QStringList& args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(program, args);
    if (!p.waitForStarted(kSlurmCommandMs))
        throw RunError(program.toStdString() + ": could not be started (" + p.errorString().toStdString() + ")");
    if (!p.waitForFinished(kSlurmCommandMs)) {
        p.kill();
        p.waitForFinished(2000);
        throw RunError(QFileInfo(program).fileName().toStdString() + ": no answer in 60 s (is slurmctld reachable?)");
    }
    const QString err = QString::fromLocal8Bit(p.readAllStandardError()).trimmed();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        throw RunError(QFileInfo(program).fileName().toStdString() +
                       " refused: " + (err.isEmpty() ? QString("exit code %1").arg(p.exitCode()) : err.section('\n', 0, 0)).toStdString());
    return QString::fromLocal8Bit(p.readAllStandardOutput()).trimmed();
}

// `sbatch --parsable` prints "JOBID" or "JOBID;CLUSTER".
QString jobIdFrom(const QString& printed)
{
    const QString id = printed.section('\n', -1).section(';', 0, 0).trimmed();
    bool ok = false;
    id.toLongLong(&ok);
    if (!ok)
        throw RunError("sbatch printed no job id ('" + printed.left(80).toStdString() + "')");
    return id;
}

// "0-3" for a whole run, else "1,3,7" (Slurm's --array list).
QString arraySpec(const std::vector<int>& shards, int total)
{
    if (static_cast<int>(shards.size()) == total && total > 0)
        return QString("0-%1").arg(total - 1);
    QStringList ids;
    for (int i : shards)
        ids << QString::number(i);
    return ids.join(',');
}

} // namespace

QString shellQuote(const QString& arg)
{
    static const QRegularExpression plain("^[A-Za-z0-9_./:=,+@%-]+$");
    if (plain.match(arg).hasMatch())
        return arg;
    QString quoted = arg;
    quoted.replace('\'', "'\\''");
    return "'" + quoted + "'";
}

QString jobScript(const ShardedRun& run, const QString& output, const QStringList& shardTail, const QStringList& mergeArgs)
{
    const QString out = QFileInfo(output).absoluteFilePath();
    checkScriptInputs(run, out); // no line break, no {shard} from outside: every line below stays the one it is
    QStringList sbatchLine;
    for (const QString& word : parseSlurmArgs(run.slurmArgs))
        sbatchLine << sbatchWord(word);
    const QString script = QDir(out).filePath(kScriptFile);
    QStringList shardCommand{"\"$ropescope\""};
    for (const QString& a : run.shardArgs)
        shardCommand << shellQuote(a);
    for (const QString& a : shardTail) { // each piece quoted, the task id between them: 'out $dir/shards/'"$shard"
        const QStringList pieces = a.split(kShardIndex);
        QStringList quoted;
        for (const QString& piece : pieces)
            quoted << (piece.isEmpty() ? QString() : shellQuote(piece));
        shardCommand << quoted.join("\"$shard\"");
    }
    QStringList mergeCommand{"\"$ropescope\""};
    for (const QString& a : mergeArgs)
        mergeCommand << shellQuote(a);
    const QString all = QString("0-%1").arg(run.shards - 1);
    QString text;
    text += "#!/bin/bash\n";
    text += QString("# RopeScope: a %1 measurement in %2 shards, written by `ropescope %1 --slurm %2`.\n").arg(run.kind).arg(run.shards);
    text += "# Each array task runs one shard into shards/<task>; the merge job then writes the result into this folder.\n";
    text +=
        QString("#   ropescope %1 --status %2    where the shards stand (done, running, failed, missing)\n").arg(run.kind, shellQuote(out));
    text += QString("#   ropescope %1 --resume %2    resubmits the shards not done, then the merge\n").arg(run.kind, shellQuote(out));
    text += "# To submit it yourself, as --slurm did:\n";
    text += QString("#   jid=$(sbatch --parsable --array=%1 --output=%2 %3)\n")
                .arg(all, shellQuote(QDir(out).filePath("logs/shard-%a.log")), shellQuote(script));
    text += QString("#   sbatch --dependency=afterok:${jid%%;*} --kill-on-invalid-dep=yes --output=%1 %2 merge\n")
                .arg(shellQuote(mergeLog(out)), shellQuote(script));
    text += QString("#SBATCH --job-name=ropescope-%1\n").arg(run.kind);
    if (!sbatchBlanks(run.workingDir)) // else the script's own `cd` alone; sbatch would cut the folder's name
        text += "#SBATCH " + sbatchWord("--chdir=" + run.workingDir) + "\n"; // quoted as sbatch reads #SBATCH lines
    if (!sbatchLine.isEmpty())
        text += "#SBATCH " + sbatchLine.join(' ') + "\n";
    text += "set -euo pipefail\n";
    text += "cd " + shellQuote(run.workingDir) + "\n"; // relative paths in the command are the submitter's
    text += "ropescope=" + shellQuote(run.program) + "\n";
    text += "if [ \"${1:-}\" = merge ]; then\n";
    text += "  exec " + mergeCommand.join(' ') + "\n";
    text += "fi\n";
    text += QString("shard=${SLURM_ARRAY_TASK_ID:?one shard per array task: sbatch --array=%1 (or the argument merge)}\n").arg(all);
    text += "exec " + shardCommand.join(' ') + "\n";
    return text;
}

QString findSbatch()
{
    return QStandardPaths::findExecutable("sbatch");
}

Submission submit(const ShardedRun& run, const QString& output, const std::vector<int>& shards)
{
    const QString sbatch = findSbatch();
    if (sbatch.isEmpty())
        throw RunError("sbatch is not on PATH: this machine cannot submit to Slurm (--dry-run writes the job script without submitting)");
    const QString out = QFileInfo(output).absoluteFilePath();
    const QString script = QDir(out).filePath(kScriptFile);
    if (!QDir().mkpath(QDir(out).filePath("logs")))
        throw RunError(QDir(out).filePath("logs").toStdString() + ": cannot create the folder for the jobs' logs");
    const QStringList passed = parseSlurmArgs(run.slurmArgs);
    Submission s;
    s.shards = shards;
    s.submittedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
    QStringList mergeArgs{"--parsable", "--output=" + mergeLog(out)};
    if (!shards.empty()) {
        s.arrayJob = jobIdFrom(runClient(
            sbatch,
            QStringList{"--parsable", "--array=" + arraySpec(shards, run.shards), "--output=" + QDir(out).filePath("logs/shard-%a.log")} +
                passed + QStringList{script}));
        mergeArgs << "--dependency=afterok:" + s.arrayJob << "--kill-on-invalid-dep=yes";
    }
    try {
        s.mergeJob = jobIdFrom(runClient(sbatch, mergeArgs + passed + QStringList{script, "merge"}));
    } catch (const RunError& e) {
        throw RunError(std::string(e.what()) +
                       (s.arrayJob.isEmpty() ? ""
                                             : " (the shards went in as job " + s.arrayJob.toStdString() +
                                "; `--resume` submits the merge once they are done)"));
    }
    return s;
}

QueueView readQueue(const ShardedRun& run)
{
    QueueView view;
    const QString squeue = QStandardPaths::findExecutable("squeue");
    if (squeue.isEmpty() || run.submissions.empty())
        return view;
    // Every job of this user, one line per array task; ours are picked out by id (an id squeue has forgotten
    // would fail a -j query).
    QString printed;
    try {
        printed = runClient(squeue, {"--noheader", "--array", "--me", "--format=%i|%T"});
    } catch (const RunError&) {
        return view;
    }
    view.available = true;
    for (const QString& line : printed.split('\n', Qt::SkipEmptyParts)) {
        const QString id = line.section('|', 0, 0).trimmed(), state = line.section('|', 1, 1).trimmed();
        for (const Submission& s : run.submissions) { // later submissions override earlier ones
            if (!s.arrayJob.isEmpty() && id.startsWith(s.arrayJob + "_")) {
                bool ok = false;
                const int task = id.mid(s.arrayJob.size() + 1).toInt(&ok);
                if (ok && task >= 0 && task < run.shards)
                    view.shards[task] = state;
            }
            if (id == s.mergeJob && &s == &run.submissions.back())
                view.merge = state;
        }
    }
    return view;
}

} // namespace ropescope::cluster

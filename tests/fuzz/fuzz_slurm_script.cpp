// libFuzzer target: the Slurm job script writer (issue 54). The input is split at NUL bytes into the program's
// path, the working folder, --output, --slurm-args and the run's arguments. Whatever the writer accepts must
// come out as exactly the script's lines: no byte from outside starts a line of its own, ends a quote or
// becomes shell syntax. Each line is read back the way its reader reads it (bash's words for the commands and
// the commented commands, sbatch's reader for the #SBATCH lines) and must give back exactly the words that
// went in; anything else aborts.
#include "core/cluster/slurm.h"

#include <QDir>
#include <QFileInfo>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace ropescope::cluster;

namespace {

[[noreturn]] void fail(const char* what, const QString& line)
{
    std::fprintf(stderr, "fuzz_slurm_script: %s: [%s]\n", what, line.toUtf8().constData());
    std::abort();
}

// A variable's expansion inside a word, as the words below spell it ($ropescope, "$shard"); no input byte can
// be \x01 or \x02, since the writer refuses control characters.
QString variable(const QString& name)
{
    return QChar(1) + name + QChar(2);
}

bool plainShellChar(QChar c)
{
    return c.isLetterOrNumber() ? c.unicode() < 128 : QString("_./:=,+@%-").contains(c);
}

// Bash's words for the subset a job script may hold: plain characters, '...' (literal), "..." holding
// $name expansions and literal characters, a backslash quoting the next character. Anything else outside quotes (a $, a backtick, ;, |, &, (, ), <,
// >, #, *, ?, [, ~, a backslash) or an unterminated quote is not a script the writer may produce: nullopt.
std::optional<QStringList> shellWords(const QString& text)
{
    QStringList words;
    QString word;
    bool inWord = false;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c == ' ') {
            if (inWord)
                words << word;
            word.clear();
            inWord = false;
            continue;
        }
        if (c == '\'') {
            const qsizetype end = text.indexOf('\'', i + 1);
            if (end < 0)
                return std::nullopt;
            word += text.mid(i + 1, end - i - 1);
            i = end;
        } else if (c == '"') {
            qsizetype j = i + 1;
            for (; j < text.size() && text[j] != '"'; ++j) {
                if (text[j] == '$') {
                    qsizetype k = j + 1;
                    while (k < text.size() && (text[k].isLetterOrNumber() || text[k] == '_') && text[k].unicode() < 128)
                        ++k;
                    if (k == j + 1)
                        return std::nullopt;
                    word += variable(text.mid(j + 1, k - j - 1));
                    j = k - 1;
                } else if (text[j] == '\\' || text[j] == '`' || text[j] == '!') {
                    return std::nullopt;
                } else {
                    word += text[j];
                }
            }
            if (j >= text.size())
                return std::nullopt;
            i = j;
        } else if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') { // \' between quoted pieces
            word += text[++i];
        } else if (plainShellChar(c)) {
            word += c;
        } else {
            return std::nullopt;
        }
        inWord = true;
    }
    if (inWord)
        words << word;
    return words;
}

// sbatch's reader of an #SBATCH line (Slurm's _get_argument): "packjob" blanked anywhere, a word that starts
// with ':' refused, a backslash escapes the next character, quotes group, an unquoted # ends the line.
std::optional<QStringList> sbatchWords(QString text)
{
    if (text.contains("packjob", Qt::CaseInsensitive) || text.contains("hetjob", Qt::CaseInsensitive))
        return std::nullopt; // sbatch would blank it or split the job there
    // C's isspace in sbatch: ASCII blanks only (a UTF-8 byte of U+00A0 is no space to it).
    const auto space = [](QChar c) { return c == ' ' || (c.unicode() >= '\t' && c.unicode() <= '\r'); };
    QStringList words;
    qsizetype i = 0;
    while (true) {
        while (i < text.size() && space(text[i]))
            ++i;
        if (i >= text.size())
            return words;
        if (text[i] == ':')
            return std::nullopt;
        QString word;
        bool quoted = false, escaped = false;
        QChar quote;
        for (; i < text.size() && (quoted || !space(text[i])); ++i) {
            const QChar c = text[i];
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
                continue;
            } else if (quoted) {
                if (c == quote) {
                    quoted = false;
                    continue;
                }
            } else if (c == '"' || c == '\'') {
                quoted = true;
                quote = c;
                continue;
            } else if (c == '#') {
                return std::nullopt; // the rest would be a comment: words lost
            }
            word += c;
        }
        if (quoted || escaped)
            return std::nullopt;
        words << word;
    }
}

// `line` must be prefix + words + suffix, the words as `reader` reads them equal to `expected`.
template <class Reader>
void expectWords(const QString& line, const QString& prefix, const QStringList& expected, const QString& suffix, const Reader& reader)
{
    if (!line.startsWith(prefix) || !line.endsWith(suffix) || line.size() < prefix.size() + suffix.size())
        fail("a line lost its fixed text", line);
    const std::optional<QStringList> words = reader(line.mid(prefix.size(), line.size() - prefix.size() - suffix.size()));
    if (!words)
        fail("a line holds syntax the writer must never produce", line);
    if (*words != expected)
        fail("a line's words differ from those that went in", line);
}

void expectShell(const QString& line, const QString& prefix, const QStringList& expected, const QString& suffix = {})
{
    expectWords(line, prefix, expected, suffix, shellWords);
}

void expectLine(const QString& line, const QString& expected)
{
    if (line != expected)
        fail("a fixed line changed", line);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QList<QByteArray> fields = QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)).split('\0');
    if (fields.size() < 4 || fields.size() > 40)
        return 0;
    ShardedRun run;
    run.kind = "bias";
    run.shards = 4;
    run.program = QString::fromUtf8(fields[0]);
    run.workingDir = QString::fromUtf8(fields[1]);
    const QString output = QString::fromUtf8(fields[2]);
    run.slurmArgs = QString::fromUtf8(fields[3]);
    for (qsizetype i = 4; i < fields.size(); ++i)
        run.shardArgs << QString::fromUtf8(fields[i]);
    // What `bias --slurm 4` gives the shards and the merge.
    const QStringList shardTail{"--shard", QString(kShardIndex) + "/4", "--output", QDir(output).filePath(QString("shards/") + kShardIndex),
                                "--skip-complete"};
    const QStringList mergeArgs{"bias", "--merge", "--output", output};
    QString script;
    try {
        script = jobScript(run, output, shardTail, mergeArgs);
    } catch (const RunError&) {
        return 0; // refused, before anything is written
    }

    const QString out = QFileInfo(output).absoluteFilePath();
    const QString file = QDir(out).filePath(kScriptFile);
    const QStringList sbatchArgs = parseSlurmArgs(run.slurmArgs); // accepted above
    QStringList lines = script.split('\n');
    if (lines.isEmpty() || !lines.last().isEmpty())
        fail("the script does not end with a line break", script);
    lines.removeLast();
    const bool chdirLine =
        !run.workingDir.contains("packjob", Qt::CaseInsensitive) && !run.workingDir.contains("hetjob", Qt::CaseInsensitive);
    const int expectedLines = 17 + (chdirLine ? 1 : 0) + (sbatchArgs.isEmpty() ? 0 : 1);
    if (lines.size() != expectedLines)
        fail("the script has another number of lines than the writer writes", script);
    int n = 0;
    expectLine(lines[n++], "#!/bin/bash");
    expectLine(lines[n++], "# RopeScope: a bias measurement in 4 shards, written by `ropescope bias --slurm 4`.");
    expectLine(lines[n++], "# Each array task runs one shard into shards/<task>; the merge job then writes the result into this folder.");
    expectShell(lines[n++], "#   ropescope bias --status ", {out}, "    where the shards stand (done, running, failed, missing)");
    expectShell(lines[n++], "#   ropescope bias --resume ", {out}, "    resubmits the shards not done, then the merge");
    expectLine(lines[n++], "# To submit it yourself, as --slurm did:");
    expectShell(lines[n++], "#   jid=$(sbatch --parsable --array=0-3 --output=", {QDir(out).filePath("logs/shard-%a.log"), file}, ")");
    expectShell(lines[n++],
                "#   sbatch --dependency=afterok:${jid%%;*} --kill-on-invalid-dep=yes --output=", {mergeLog(out), file, "merge"});
    expectLine(lines[n++], "#SBATCH --job-name=ropescope-bias");
    if (chdirLine)
        expectWords(lines[n++], "#SBATCH ", {"--chdir=" + run.workingDir}, {}, sbatchWords);
    if (!sbatchArgs.isEmpty())
        expectWords(lines[n++], "#SBATCH ", sbatchArgs, {}, sbatchWords);
    expectLine(lines[n++], "set -euo pipefail");
    expectShell(lines[n++], "", {"cd", run.workingDir});
    expectShell(lines[n++], "", {"ropescope=" + run.program});
    expectLine(lines[n++], "if [ \"${1:-}\" = merge ]; then");
    expectShell(lines[n++], "  ", QStringList{"exec", variable("ropescope")} + mergeArgs);
    expectLine(lines[n++], "fi");
    expectLine(lines[n++], "shard=${SLURM_ARRAY_TASK_ID:?one shard per array task: sbatch --array=0-3 (or the argument merge)}");
    QStringList shardCommand{"exec", variable("ropescope")};
    shardCommand += run.shardArgs;
    for (const QString& a : shardTail)
        shardCommand << QString(a).replace(kShardIndex, variable("shard"));
    expectShell(lines[n++], "", shardCommand);
    return 0;
}

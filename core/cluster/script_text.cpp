#include "core/cluster/script_text.h"

#include "core/cluster/slurm.h"

namespace ropescope::cluster {
namespace {

bool isControl(char32_t c)
{
    return c < 0x20 || (c >= 0x7f && c < 0xa0);
}

// Bidirectional embeddings, overrides and isolates: shown escaped, so a printed name reads in its byte order.
bool isBidiControl(char32_t c)
{
    return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

QString escaped(char32_t c)
{
    switch (c) {
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case 0x1b: return "\\e";
    default: break;
    }
    if (c < 0x100)
        return QString("\\x%1").arg(static_cast<uint>(c), 2, 16, QChar('0'));
    return QString("\\u{%1}").arg(static_cast<uint>(c), 4, 16, QChar('0'));
}

} // namespace

QString printable(const QString& text)
{
    QString out;
    out.reserve(text.size());
    for (const char32_t c : text.toUcs4())
        out += isControl(c) || isBidiControl(c) ? escaped(c) : QString::fromUcs4(&c, 1);
    return out;
}

void checkScriptText(const QString& what, const QString& value)
{
    for (const char32_t c : value.toUcs4()) {
        if (isControl(c))
            throw RunError(what.toStdString() + " '" + printable(value).toStdString() + "' holds a control character (" +
                           escaped(c).toStdString() +
                           "), which would break the lines of the job script (slurm_job.sh); rename it or run from another folder");
        if (c == 0xfffd)
            throw RunError(what.toStdString() + " '" + printable(value).toStdString() +
                           "' is not valid UTF-8 (or holds U+FFFD), so the job script could not name it");
    }
}

void checkScriptInputs(const ShardedRun& run, const QString& output)
{
    checkScriptText("the ropescope program's path", run.program);
    checkScriptText("the current folder", run.workingDir);
    checkScriptText("--output", output);
    if (output.contains(kShardIndex))
        throw RunError("--output '" + output.toStdString() + "' holds " + kShardIndex +
                       ", which the job script replaces by each task's shard: give a folder without it");
    for (const QString& arg : run.shardArgs)
        checkScriptText("the argument", arg);
    checkScriptText("--slurm-args", run.slurmArgs);
}

} // namespace ropescope::cluster

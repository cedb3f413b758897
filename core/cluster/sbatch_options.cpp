#include "core/cluster/sbatch_options.h"

#include "core/cluster/script_text.h"
#include "core/cluster/sharded_run.h"

#include <QProcess>
#include <QRegularExpression>

#include <algorithm>
#include <cstring>

namespace ropescope::cluster {
namespace {

enum class Arg { None, Required }; // an optional argument is only ever attached (--nice=5), as for None

struct LongOption {
    const char* name;
    Arg arg;
};

// sbatch's long options (Slurm 22.05: `sbatch --<letter>` lists each letter's, and `sbatch --<name>` says which
// need a value). A name missing here (a newer sbatch) is still refused when it abbreviates a refused one.
constexpr LongOption kLongOptions[] = {
    {"account", Arg::Required},
    {"acctg-freq", Arg::Required},
    {"array", Arg::Required},
    {"batch", Arg::Required},
    {"bb", Arg::Required},
    {"bbf", Arg::Required},
    {"begin", Arg::Required},
    {"chdir", Arg::Required},
    {"cluster", Arg::Required},
    {"cluster-constraint", Arg::Required},
    {"clusters", Arg::Required},
    {"comment", Arg::Required},
    {"constraint", Arg::Required},
    {"container", Arg::Required},
    {"context", Arg::Required},
    {"contiguous", Arg::None},
    {"core-spec", Arg::Required},
    {"cores-per-socket", Arg::Required},
    {"cpu-freq", Arg::Required},
    {"cpus-per-gpu", Arg::Required},
    {"cpus-per-task", Arg::Required},
    {"deadline", Arg::Required},
    {"delay-boot", Arg::Required},
    {"dependency", Arg::Required},
    {"distribution", Arg::Required},
    {"error", Arg::Required},
    {"exclude", Arg::Required},
    {"exclusive", Arg::None},
    {"export", Arg::Required},
    {"export-file", Arg::Required},
    {"extra-node-info", Arg::Required},
    {"get-user-env", Arg::None},
    {"gid", Arg::Required},
    {"gpu-bind", Arg::Required},
    {"gpu-freq", Arg::Required},
    {"gpus", Arg::Required},
    {"gpus-per-node", Arg::Required},
    {"gpus-per-socket", Arg::Required},
    {"gpus-per-task", Arg::Required},
    {"gres", Arg::Required},
    {"gres-flags", Arg::Required},
    {"help", Arg::None},
    {"hint", Arg::Required},
    {"hold", Arg::None},
    {"ignore-pbs", Arg::None},
    {"input", Arg::Required},
    {"job-name", Arg::Required},
    {"kill-on-invalid-dep", Arg::Required},
    {"licenses", Arg::Required},
    {"mail-type", Arg::Required},
    {"mail-user", Arg::Required},
    {"mcs-label", Arg::Required},
    {"mem", Arg::Required},
    {"mem-bind", Arg::Required},
    {"mem-per-cpu", Arg::Required},
    {"mem-per-gpu", Arg::Required},
    {"mincpus", Arg::Required},
    {"network", Arg::Required},
    {"nice", Arg::None},
    {"no-kill", Arg::None},
    {"no-requeue", Arg::None},
    {"nodefile", Arg::Required},
    {"nodelist", Arg::Required},
    {"nodes", Arg::Required},
    {"ntasks", Arg::Required},
    {"ntasks-per-core", Arg::Required},
    {"ntasks-per-gpu", Arg::Required},
    {"ntasks-per-node", Arg::Required},
    {"ntasks-per-socket", Arg::Required},
    {"ntasks-per-tres", Arg::Required},
    {"open-mode", Arg::Required},
    {"output", Arg::Required},
    {"overcommit", Arg::None},
    {"oversubscribe", Arg::None},
    {"parsable", Arg::None},
    {"partition", Arg::Required},
    {"power", Arg::Required},
    {"prefer", Arg::Required},
    {"priority", Arg::Required},
    {"profile", Arg::Required},
    {"propagate", Arg::None},
    {"qos", Arg::Required},
    {"quiet", Arg::None},
    {"reboot", Arg::None},
    {"requeue", Arg::None},
    {"reservation", Arg::Required},
    {"signal", Arg::Required},
    {"sockets-per-node", Arg::Required},
    {"spread-job", Arg::None},
    {"switches", Arg::Required},
    {"tasks-per-node", Arg::Required},
    {"test-only", Arg::None},
    {"thread-spec", Arg::Required},
    {"threads-per-core", Arg::Required},
    {"time", Arg::Required},
    {"time-min", Arg::Required},
    {"tmp", Arg::Required},
    {"uid", Arg::Required},
    {"usage", Arg::None},
    {"use-min-nodes", Arg::None},
    {"verbose", Arg::None},
    {"version", Arg::None},
    {"wait", Arg::None},
    {"wait-all-nodes", Arg::Required},
    {"wckey", Arg::Required},
    {"wrap", Arg::Required},
};

// The options the run sets itself, and those after which sbatch prints no job id (--wait blocks until the job
// ends, --test-only submits nothing). Short forms: a d o e D W.
struct Refused {
    const char* name;
    char letter; // 0: no short form
    const char* why;
};
constexpr char kSetByRun[] = "it is set by RopeScope itself (the array, the merge's dependency, the logs, the folder)";
constexpr Refused kRefused[] = {
    {"array", 'a', kSetByRun},
    {"dependency", 'd', kSetByRun},
    {"output", 'o', kSetByRun},
    {"error", 'e', kSetByRun},
    {"chdir", 'D', kSetByRun},
    {"wrap", 0, kSetByRun},
    {"parsable", 0, kSetByRun},
    {"kill-on-invalid-dep", 0, kSetByRun},
    {"wait", 'W', "sbatch would wait for the job to end instead of printing its id"},
    {"test-only", 0, "sbatch would submit nothing"},
};

// Short options (Slurm 22.05) that take a value, attached (-pgpu) or the next word; h k s v H O Q V W take none,
// so a cluster goes on after them (-Ho/path is -H -o /path).
constexpr char kShortWithValue[] = "abcdeimnopqtwxABCDFGJLMNS";

const Refused* refusedByName(const QString& name)
{
    for (const Refused& r : kRefused)
        if (name == r.name)
            return &r;
    return nullptr;
}

[[noreturn]] void refuse(const QString& word, const Refused& r, bool ambiguous = false)
{
    throw RunError("--slurm-args: " + printable(word).toStdString() + (ambiguous ? " may abbreviate" : " is") + " sbatch's --" + r.name +
                   (word.startsWith("--") ? " (sbatch takes any unambiguous abbreviation): "
                                          : " (sbatch reads short options run together, with their values attached): ") +
                   r.why);
}

// What sbatch makes of `--prefix`: the option it names exactly, else the known options it abbreviates.
QStringList longMatches(const QString& prefix)
{
    QStringList matches;
    for (const LongOption& o : kLongOptions) {
        if (prefix == o.name)
            return {o.name};
        if (QString(o.name).startsWith(prefix))
            matches << o.name;
    }
    for (const Refused& r : kRefused) // also when a newer sbatch's table is longer than ours
        if (QString(r.name).startsWith(prefix) && !matches.contains(r.name))
            matches << r.name;
    return matches;
}

bool takesValue(const QString& name)
{
    return std::any_of(std::begin(kLongOptions), std::end(kLongOptions),
                       [&](const LongOption& o) { return name == o.name && o.arg == Arg::Required; });
}

[[noreturn]] void notAnOption(const QString& word)
{
    throw RunError("--slurm-args: '" + printable(word).toStdString() +
                   "' is no sbatch option nor an option's value; sbatch would take it for the job script (give values as "
                   "--option=value, e.g. \"--partition=gpu --time=2:00:00\")");
}

} // namespace

QStringList parseSlurmArgs(const QString& text)
{
    checkScriptText("--slurm-args", text);
    if (text.contains('#'))
        throw RunError("--slurm-args: one line of sbatch options, without '#' (sbatch reads the rest of an #SBATCH line as a comment)");
    if (sbatchBlanks(text))
        throw RunError("--slurm-args: 'packjob' and 'hetjob' separate the parts of a heterogeneous job in sbatch; not here");
    const QStringList args = QProcess::splitCommand(text);
    bool valueNext = false; // the word before was an option that takes this one as its value
    for (const QString& a : args) {
        if (valueNext) {
            valueNext = false;
            continue;
        }
        if (a == "--" || a == "-" || !a.startsWith('-'))
            notAnOption(a);
        if (a.startsWith("--")) {
            const QString name = a.mid(2).section('=', 0, 0);
            if (name.isEmpty())
                notAnOption(a);
            const QStringList matches = longMatches(name);
            for (const QString& m : matches)
                if (const Refused* r = refusedByName(m))
                    refuse(a, *r, matches.size() > 1);
            // Unknown or ambiguous options are sbatch's to refuse; a value of theirs must be attached.
            valueNext = matches.size() == 1 && !a.contains('=') && takesValue(matches.first());
            continue;
        }
        for (qsizetype i = 1; i < a.size(); ++i) { // -Ho/path: -H, then -o with the value /path
            const char c = a[i].toLatin1();
            for (const Refused& r : kRefused)
                if (r.letter != 0 && c == r.letter)
                    refuse(a, r);
            if (c != 0 && std::strchr(kShortWithValue, c)) {
                valueNext = i + 1 == a.size();
                break;
            }
        }
    }
    if (valueNext)
        throw RunError("--slurm-args: " + printable(args.last()).toStdString() + " needs a value");
    return args;
}

bool sbatchBlanks(const QString& text)
{
    return text.contains("packjob", Qt::CaseInsensitive) || text.contains("hetjob", Qt::CaseInsensitive);
}

QString sbatchWord(const QString& word)
{
    // sbatch's reader: a backslash escapes the next character anywhere, quotes group, an unquoted # ends the
    // line, a line that starts with ':' is refused.
    static const QRegularExpression plain("^[A-Za-z0-9_./=,+@%-][A-Za-z0-9_./:=,+@%-]*$");
    if (plain.match(word).hasMatch())
        return word;
    QString quoted = word;
    quoted.replace('\\', "\\\\").replace('"', "\\\"");
    return "\"" + quoted + "\"";
}

} // namespace ropescope::cluster

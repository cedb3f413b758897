#pragma once
// The sbatch options a user passes through (--slurm-args), read the way sbatch reads them: getopt_long takes
// any unambiguous prefix of a long option (--out is --output) and a short option's value attached to it
// (-o/path, -a0-99), and the first word that is no option's value ends the options and becomes the job
// script. So a refused option is matched by prefix and inside short-option clusters, not by exact name.
#include <QString>
#include <QStringList>

namespace ropescope::cluster {

// Checks the --slurm-args text: sbatch options only, none of those the run sets itself (--array,
// --dependency, --output, --error, --wrap, --chdir, --parsable, --kill-on-invalid-dep) or that would keep
// sbatch from printing a job id (--wait, --test-only), in any spelling sbatch accepts; no word that sbatch
// would take for the script. Throws RunError naming the option. Returns the words, as passed to sbatch.
QStringList parseSlurmArgs(const QString& text);

// Whether sbatch's script reader would blank part of `text` on an #SBATCH line (it overwrites "packjob", in any
// case, with spaces; "hetjob" separates heterogeneous jobs' parts too).
bool sbatchBlanks(const QString& text);

// One word for an `#SBATCH` line, as sbatch's script reader splits them: plain, or in double quotes with
// \ and " escaped by a backslash.
QString sbatchWord(const QString& word);

} // namespace ropescope::cluster

#pragma once
// What may go into a job script, and how text from outside is shown. A path or argument is written into
// slurm_job.sh (shell words, comment lines, #SBATCH lines); a control character there ends a comment or an
// #SBATCH block and starts a line of its own (issue 54), so the whole run is refused before a file is
// written. Text read back from a record that anyone could have edited is printed with its control
// characters escaped, never raw to a terminal.
#include "core/cluster/sharded_run.h"

#include <QString>

namespace ropescope::cluster {

// `text` with every control character (C0, DEL, C1) and the bidirectional overrides written as \n, \t, \r,
// \e or \xHH / \u{HHHH}; anything else as it is.
QString printable(const QString& text);

// Throws RunError "`what` 'value' holds a control character (\n) ..." when `value` holds a control
// character, or U+FFFD (bytes that are not UTF-8, which the script could not name).
void checkScriptText(const QString& what, const QString& value);

// Every path and argument of `run` that its job script names, and `output` (absolute), checked as above;
// `output` also may not hold "{shard}", which the script would replace by the task id. Throws RunError.
void checkScriptInputs(const ShardedRun& run, const QString& output);

} // namespace ropescope::cluster

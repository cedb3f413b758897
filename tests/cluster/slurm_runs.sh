#!/usr/bin/env bash
# `--slurm` on a real one-node Slurm (issue 44): a 4-shard bias measurement of a bundled model through
# sbatch equals the one-process run bit for bit; a shard killed in the queue is named by --status and by the
# merge's refusal, and --resume reruns just it, to the same result; eval and batch jobs through Slurm equal
# their one-process runs; bad requests get one line and exit 2.
#   tests/cluster/slurm_runs.sh ROPESCOPE MODEL_DIR JOB.json      (as root: slurmd runs jobs as their user)
set -uo pipefail
ropescope=$1 model=$2 job=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "slurm_runs: needs root for slurmd (skipped)"; exit 77; fi
for tool in slurmctld slurmd munged sbatch squeue scancel; do
  command -v "$tool" >/dev/null || { echo "slurm_runs: $tool not found (scripts/setup.sh installs Slurm)"; exit 1; }
done
work=$(mktemp -d /tmp/ropescope-slurm.XXXXXX)
source "$here/slurm_local.sh"
trap 'slurm_local_stop; rm -rf "$work"' EXIT
failures=0
check() { # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
# Waits until the run's merge is done or nothing of it is queued any more; prints --status at the end.
wait_for_run() {
  local out=$1 kind=${2:-bias} i
  for i in $(seq 600); do
    status=$("$ropescope" "$kind" --status "$out")
    if ! grep -q 'pending [1-9]\|running [1-9]\|merge: queued' <<<"$status"; then break; fi
    sleep 0.2
  done
  echo "$status"
}
measure=(bias --model "$model" --samples 16 --schemes vrope)

started=$(date +%s%N)
slurm_local_start "$work/cluster" || exit 1
echo "slurm_runs: one-node Slurm up in $(( ($(date +%s%N) - started) / 1000000 )) ms"

"$ropescope" "${measure[@]}" --output "$work/one" 2>/dev/null || { echo "FAIL: the one-process run"; exit 1; }

# 1. Four shards through sbatch, then the merge job.
t0=$(date +%s%N)
"$ropescope" "${measure[@]}" --slurm 4 --output "$work/run" >"$work/submit.txt" 2>&1
check "--slurm 4 submits (exit 0)" [ $? -eq 0 ]
check "the submission names both jobs" grep -q 'as Slurm job [0-9]*, and the merge as job [0-9]*' "$work/submit.txt"
wait_for_run "$work/run"
echo "slurm_runs: 4 shards and the merge in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
check "status: all four shards done" grep -q 'done 4, running 0, pending 0, failed 0, missing 0' <<<"$status"
check "status: merged" grep -q 'merge: done' <<<"$status"
for f in bias_state.json bias.csv bias.json; do
  check "4 shards through Slurm equal one process bit for bit ($f)" cmp -s "$work/one/$f" "$work/run/$f"
done
check "the job script is kept in OUTPUT" test -x "$work/run/slurm_job.sh"

# 2. A shard killed in the queue: the merge job never runs, --status and --merge name it, --resume reruns it alone.
"$ropescope" "${measure[@]}" --slurm 4 --output "$work/killed" >/dev/null 2>&1
array=$(sed -n 's/.*"array_job": "\([0-9]*\)".*/\1/p' "$work/killed/sharded_run.json")
scancel "${array}_2"
wait_for_run "$work/killed"
check "status: the killed shard is not done" grep -Eq 'done 3, running 0, pending 0, (failed 1, missing 0|failed 0, missing 1)' <<<"$status"
check "status: the merge did not run" grep -q 'merge: not run' <<<"$status"
merge=$("$ropescope" bias --merge --output "$work/killed" 2>&1); rc=$?
check "the merge refuses an incomplete set (exit 1)" [ $rc -eq 1 ]
check "the merge names the missing shard" grep -q 'shard 2 of 4 is not complete' <<<"$merge"
check "the refused merge wrote nothing" test ! -e "$work/killed/bias_state.json"
"$ropescope" bias --resume "$work/killed" >"$work/resume.txt" 2>&1
check "--resume resubmits only shard 2" grep -q 'submitted 1 of 4 shards' "$work/resume.txt"
wait_for_run "$work/killed"
check "resumed: merged" grep -q 'merge: done' <<<"$status"
check "resumed run equals one process bit for bit" cmp -s "$work/one/bias_state.json" "$work/killed/bias_state.json"
again=$("$ropescope" bias --resume "$work/killed" 2>&1)
check "a finished run has nothing to resume" grep -q 'nothing to resume' <<<"$again"
skipped=$(SLURM_ARRAY_TASK_ID=1 bash "$work/killed/slurm_job.sh" 2>&1)
check "a rerun shard whose state is complete is skipped" grep -q 'shard 1/4 is complete in .* already; skipped' <<<"$skipped"

# 2b. Names that are names (issue 54): submitted from a folder and into one whose names hold spaces, quotes,
# $(...) and backquotes, with --slurm-args sbatch reads from the quoted #SBATCH line too, the run merges to
# the one-process bytes and nothing of the names runs.
odd_cwd="$work/cwd it's \"q\""
odd_out="$work/run \$(touch $work/PWNED) \`touch $work/PWNED\` it's"
mkdir -p "$odd_cwd"
(cd "$odd_cwd" && "$ropescope" "${measure[@]}" --slurm 2 --output "$odd_out" --slurm-args '--comment="a b" --time=0:30:00') \
  >"$work/odd.txt" 2>&1
check "odd names: submitted (exit 0)" [ $? -eq 0 ]
check "odd names: #SBATCH --chdir is quoted for sbatch" grep -qxF "#SBATCH \"--chdir=$work/cwd it's \\\"q\\\"\"" "$odd_out/slurm_job.sh"
wait_for_run "$odd_out" >/dev/null
check "odd names: merged" grep -q 'merge: done' <<<"$status"
check "odd names: equal to one process bit for bit" cmp -s "$work/one/bias_state.json" "$odd_out/bias_state.json"
check "odd names: nothing of the names ran" test ! -e "$work/PWNED"

# 3. An evaluation and a batch job through Slurm equal their one-process runs.
"$ropescope" eval --model "$model" --samples 24 --scheme vrope --json --output "$work/eval_one.json" 2>/dev/null
"$ropescope" eval --model "$model" --samples 24 --scheme vrope --slurm 3 --output "$work/eval_run" >/dev/null 2>&1
"$ropescope" batch "$job" --output "$work/batch_one" >/dev/null 2>&1
"$ropescope" batch "$job" --slurm 3 --output "$work/batch_run" >/dev/null 2>&1
wait_for_run "$work/eval_run" eval
check "eval: 3 shards merged" grep -q 'merge: done' <<<"$status"
check "eval through Slurm equals one process bit for bit (eval.json)" cmp -s "$work/eval_one.json" "$work/eval_run/eval.json"
wait_for_run "$work/batch_run" batch
check "batch: 3 shards merged" grep -q 'merge: done' <<<"$status"
# The same files; byte for byte where one process repeats itself byte for byte (two one-process runs
# already differ in the PDF's date, in ptd.json's last bits, and the cones' antialiasing depends on what the
# offscreen view drew before).
files=$(cd "$work/batch_one" && find . -type f ! -name 'manifest*.json' | sort)
check "batch through Slurm writes the same files as one process" [ "$files" = "$(cd "$work/batch_run" && find . -type f ! -name 'manifest*.json' ! -name slurm_job.sh ! -name sharded_run.json ! -path './logs/*' | sort)" ]
compared=0 differ=0
while IFS= read -r f; do
  case "$f" in *.csv|*.svg|./attention/*|./sweep/ptd_*|./prior.png) ;; *) continue ;; esac
  compared=$((compared + 1))
  cmp -s "$work/batch_one/$f" "$work/batch_run/$f" || { differ=$((differ + 1)); echo "  differs: $f"; }
done <<<"$files"
check "batch through Slurm: $compared tables, charts and maps equal one process byte for byte" [ $compared -ge 8 -a $differ -eq 0 ]
check "batch: the merged manifest lists every item" python3 -c '
import json, sys
one = json.load(open(sys.argv[1])); run = json.load(open(sys.argv[2]))
sys.exit(not (run["complete"] and run["failed"] == 0 and [i["output"] for i in run["items"]] == [i["output"] for i in one["items"]]))' \
  "$work/batch_one/manifest.json" "$work/batch_run/manifest.json"

# 4. Bad requests: one line, exit 2, nothing submitted.
bad() { # bad NAME EXPECTED-TEXT COMMAND...
  local name=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  check "$name: exit 2" [ $rc -eq 2 ]
  check "$name: one line naming it" bash -c '[ "$(printf "%s\n" "$1" | wc -l)" -eq 1 ] && grep -q -- "$2" <<<"$1"' _ "$out" "$want"
}
mkdir "$work/empty-path"
bad "no sbatch on PATH" "sbatch is not on PATH" env PATH="$work/empty-path" "$ropescope" "${measure[@]}" --slurm 4 --output "$work/nosbatch"
check "no sbatch: no folder written" test ! -e "$work/nosbatch"
bad "--slurm 0" "expected a number of shards" "$ropescope" "${measure[@]}" --slurm 0 --output "$work/zero"
bad "more shards than samples" "give at most 16 shards" "$ropescope" "${measure[@]}" --slurm 17 --output "$work/many"
bad "OUTPUT holding another measurement" "holds another measurement" "$ropescope" "${measure[@]}" --slurm 2 --output "$work/one"
bad "OUTPUT holding another sharded run" "holds another measurement (sharded_run.json" "$ropescope" "${measure[@]}" --slurm 2 --output "$work/run"
bad "--resume on a folder that is not a sharded run" "is not a sharded run" "$ropescope" bias --resume "$work/one"
bad "--status on a folder that is not a sharded run" "is not a sharded run" "$ropescope" bias --status "$work/one"
printf '%s' '{"items": [{"type": "ptd", "layout": "text:4,image:4x4,text:4", "scheme=x.py": true, "output": "a.json"}]}' >"$work/badkey.json"
bad "a batch item with a bad key, before any submission" "bad parameter name 'scheme=x.py'" "$ropescope" batch "$work/badkey.json" --slurm 1 --output "$work/badkey"
bad "--slurm-args setting the array" "set by RopeScope itself" "$ropescope" "${measure[@]}" --slurm 2 --slurm-args "--array=0-9" --output "$work/args"
bad "--slurm-args abbreviating --output" "is sbatch's --output" "$ropescope" "${measure[@]}" --slurm 2 --slurm-args "--out=/tmp/x" --output "$work/args"
bad "a line break in --output" "holds a control character" "$ropescope" "${measure[@]}" --slurm 2 --output "$work/nl
touch $work/PWNED #"
check "a line break in --output: nothing written or run" test ! -e "$work/PWNED" -a ! -e "$work/nl"

echo "slurm_runs: $failures failed"
[ $failures -eq 0 ]

#!/usr/bin/env bash
# A one-node Slurm on 127.0.0.1 for the cluster test (../shared/PLATFORM.md's recipe): munge with a private
# key and socket, slurmctld and slurmd as root, everything under one run folder, nothing in /etc or /run.
#   source tests/cluster/slurm_local.sh; slurm_local_start RUN_DIR; ...; slurm_local_stop
# Exports SLURM_CONF for the clients (sbatch, squeue, scancel).

slurm_local_free_port() { # the first port from $1 upwards that nothing listens on
  local port=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

slurm_local_start() {
  local run=$1
  SLURM_LOCAL_RUN=$run
  mkdir -p "$run"/{munge,spool,state,log}
  # munged wants every folder above its socket searchable by all (mktemp -d makes 700 ones).
  local d=$run
  while [ "$d" != / ]; do chmod a+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  chmod 755 "$run/munge"
  head -c 1024 /dev/urandom >"$run/munge/key"
  chmod 400 "$run/munge/key"
  munged -F --socket="$run/munge/socket" --key-file="$run/munge/key" --pid-file="$run/munge/pid" \
    --seed-file="$run/munge/seed" >"$run/log/munged.log" 2>&1 &
  SLURM_LOCAL_PIDS=($!)
  local node hw ctld_port slurmd_port
  node=$(hostname -s)
  # The node's hardware as slurmd sees it, with RealMemory at 90% so the node is never drained for memory.
  hw=$(slurmd -C | head -1 | sed -E 's/^NodeName=[^ ]+ //; s/ UpTime=.*//')
  hw=$(echo "$hw" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^RealMemory=/) { split($i, kv, "="); $i = "RealMemory=" int(kv[2] * 0.9) } print}')
  ctld_port=$(slurm_local_free_port 16817)
  slurmd_port=$(slurm_local_free_port $((ctld_port + 1)))
  cat >"$run/slurm.conf" <<CONF
ClusterName=ropescope-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$run/munge/socket
CredType=cred/munge
StateSaveLocation=$run/state
SlurmdSpoolDir=$run/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$run/slurm.conf"
  for _ in $(seq 50); do [ -S "$run/munge/socket" ] && break; sleep 0.1; done
  if [ ! -S "$run/munge/socket" ]; then
    echo "slurm_local: munged did not start: $(tail -n 1 "$run/log/munged.log")" >&2
    return 1
  fi
  slurmctld -D -c -f "$SLURM_CONF" >"$run/log/slurmctld.log" 2>&1 &
  SLURM_LOCAL_PIDS+=($!)
  slurmd -D -f "$SLURM_CONF" -N "$node" >"$run/log/slurmd.log" 2>&1 &
  SLURM_LOCAL_PIDS+=($!)
  local state=""
  for _ in $(seq 300); do
    state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    sleep 0.1
  done
  echo "slurm_local: the node did not become idle in 30 s (state '$state'); logs in $run/log" >&2
  tail -n 5 "$run"/log/*.log >&2
  return 1
}

slurm_local_stop() {
  # Jobs first: slurmstepd outlives slurmd, so a job still running would outlive the cluster.
  if [ -n "${SLURM_CONF:-}" ]; then
    scancel --quiet --me 2>/dev/null || true
    for _ in $(seq 100); do [ -z "$(squeue --me --noheader 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  [ ${#SLURM_LOCAL_PIDS[@]} -gt 0 ] || return 0
  kill -TERM "${SLURM_LOCAL_PIDS[@]}" 2>/dev/null || true
  for _ in $(seq 100); do
    local alive=0
    for p in "${SLURM_LOCAL_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  kill -KILL "${SLURM_LOCAL_PIDS[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  SLURM_LOCAL_PIDS=()
}

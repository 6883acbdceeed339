#!/usr/bin/env bash
# A one-machine Slurm cluster in a private directory, for tests and trying
# the deployment out: munged, slurmctld and slurmd on this host, one node with
# this machine's CPUs and one partition. Nothing of the system's own Slurm or
# munge set-up is used or changed (own key, socket, ports, state, logs).
#   deploy/slurm/local-cluster.sh start DIR   -> prints "export SLURM_CONF=DIR/slurm.conf"
#   deploy/slurm/local-cluster.sh stop DIR
# Needs Debian's slurmctld, slurmd, slurm-client and munge (scripts/install-deps.sh)
# and root (slurmd runs jobs as their submitter). Exit 77 when it cannot start.
set -euo pipefail
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)

stop() {
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
  done
  sleep 0.5
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null || true
    rm -f "$dir/$p.pid"
  done
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

skip() { echo "local Slurm cluster not started: $*" >&2; stop; exit 77; }
for b in munged slurmctld slurmd sbatch; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b not installed (scripts/install-deps.sh installs it)"
done
[ "$(id -u)" = 0 ] || skip "needs root (slurmd starts jobs as their user)"
export PATH="$PATH:/usr/sbin"

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
# A key of our own (munge wants it private to the user it runs as).
[ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
  || skip "munged did not start ($(tail -n 2 "$dir/munged.log" 2>/dev/null))"

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
# Ports from the directory's name, so two clusters on one host do not collide.
base=$(( 20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 20000 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=kclocal
SlurmctldHost=$host
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MaxArraySize=1001
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=kc Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i -f "$SLURM_CONF" || skip "slurmctld did not start ($(tail -n 2 "$dir/slurmctld.log" 2>/dev/null))"
slurmd -f "$SLURM_CONF" || skip "slurmd did not start ($(tail -n 2 "$dir/slurmd.log" 2>/dev/null))"
for _ in $(seq 1 60); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.5
done
skip "the node did not come up in 30 s: $(sinfo -h 2>&1 | head -n 2); $(tail -n 3 "$dir/slurmd.log" 2>/dev/null)"

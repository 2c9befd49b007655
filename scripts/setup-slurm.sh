#!/usr/bin/env bash
# A one-host Slurm cluster for the `dnnbench slurm` tests, as root on Debian 12: Debian's
# slurm-wlm daemons and munge, this machine as the only node (all its cores) in partition
# "debug", started in the background without systemd. Idempotent: a second run only
# (re)starts what is not running.
set -euo pipefail
log() { printf '[setup-slurm] %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "setup-slurm: run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  log "apt-get install slurmctld slurmd slurm-client munge"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

node=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
conf=/etc/slurm/slurm.conf
want=$(cat <<EOF
# written by dnnbench scripts/setup-slurm.sh: one node, no cgroups (works in containers)
ClusterName=dnnbench
SlurmctldHost=$node
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
NodeName=$node CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
)
if [ "$(cat $conf 2>/dev/null)" != "$want" ]; then
  log "writing $conf (node $node, $cpus CPUs, ${mem} MiB)"
  mkdir -p /etc/slurm
  printf '%s\n' "$want" >$conf
  pkill -x slurmctld 2>/dev/null || true
  pkill -x slurmd 2>/dev/null || true
  sleep 1
fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
chown munge:munge /run/munge 2>/dev/null || true

if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  log "starting munged"
  su -s /bin/sh munge -c /usr/sbin/munged
fi
pgrep -x slurmctld >/dev/null || { log "starting slurmctld"; slurmctld; }
pgrep -x slurmd >/dev/null || { log "starting slurmd"; slurmd; }

for _ in $(seq 30); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  case "$state" in idle|mixed|allocated) break ;; esac
  sleep 1
done
case "$state" in
  idle|mixed|allocated) log "slurm $(sinfo -V | awk '{print $2}'): node $node $state" ;;
  *) scontrol update nodename="$node" state=resume 2>/dev/null || true
     echo "setup-slurm: node $node is '${state:-unknown}', see /var/log/slurm/" >&2
     tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
     exit 1 ;;
esac

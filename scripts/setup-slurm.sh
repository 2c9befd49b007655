#!/usr/bin/env bash
# A Slurm cluster on this one machine for the `dnnbench slurm` tests, as root on Debian 12:
# Debian's slurm-wlm daemons and munge, started in the background without systemd, partition
# "debug". Idempotent: a second run only (re)starts what is not running.
#
#   setup-slurm.sh              this machine is the only node (all its cores), as before
#   setup-slurm.sh --nodes N    N nodes (N >= 2), node1..nodeN, each in its own network and UTS
#                               namespace: a veth on the bridge dnbbr0 (10.77.0.1/24), its own
#                               address 10.77.0.1I, its own hostname and its own slurmd -N nodeI;
#                               one slurmctld and one munged for all. The filesystem is shared,
#                               as a cluster's is. Each node's /etc/hosts is a Debian install's:
#                               its own name on 127.0.1.1 first, the other nodes after.
set -euo pipefail
log() { printf '[setup-slurm] %s\n' "$*"; }
die() { echo "setup-slurm: $*" >&2; exit 1; }
nodes=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || die "--nodes needs a number"; nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    -h|--help) sed -n '2,12p' "$0" | cut -c3-; exit 0 ;;
    *) die "unknown argument $1 (usage: setup-slurm.sh [--nodes N])" ;;
  esac
done
case "$nodes" in ''|*[!0-9]*) die "--nodes $nodes: a number from 1 to 9" ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 9 ] || die "--nodes $nodes: a number from 1 to 9"
[ "$(id -u)" = 0 ] || die "run as root"
export DEBIAN_FRONTEND=noninteractive

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  log "apt-get install slurmctld slurmd slurm-client munge"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge iproute2 >/dev/null
fi

head=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
BRIDGE=dnbbr0
NET=10.77.0
names=()
if [ "$nodes" = 1 ]; then
  names=("$head")
  ctld=$head
  node_lines="NodeName=$head CPUs=$cpus RealMemory=$mem State=UNKNOWN"
  spool=/var/spool/slurmd; pidfile=/run/slurmd.pid; logfile=/var/log/slurm/slurmd.log
else
  ctld="$head($NET.1)"
  node_lines=""
  for i in $(seq "$nodes"); do
    names+=("node$i")
    # Every node is offered all the cores: they share them, as the README says.
    node_lines+="NodeName=node$i NodeAddr=$NET.1$i NodeHostname=node$i Port=$((6820 + i)) CPUs=$cpus RealMemory=$((mem / nodes)) State=UNKNOWN"$'\n'
  done
  node_lines=${node_lines%$'\n'}
  spool=/var/spool/slurmd/%n; pidfile=/run/slurmd-%n.pid; logfile=/var/log/slurm/slurmd-%n.log
fi
list=$(IFS=,; echo "${names[*]}")
conf=/etc/slurm/slurm.conf
want=$(cat <<EOF
# written by dnnbench scripts/setup-slurm.sh: $nodes node(s), no cgroups (works in containers)
ClusterName=dnnbench
SlurmctldHost=$ctld
AuthType=auth/munge
# A requeued job waits this long before it starts again (120 s by default): sooner, its node
# may still hold the killed start's credential as revoked and fail it ("Job credential revoked")
AuthInfo=cred_expire=10
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=$spool
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=$pidfile
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=$logfile
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
KillWait=10
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5   # a requeued job starts within seconds of its hold
JobAcctGatherType=jobacct_gather/none
$node_lines
PartitionName=debug Nodes=$list Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
)

# --- the nodes' network: a bridge on the host, a namespace with a veth per node --------------
netns_of() { echo "dnnbench-$1"; }
if [ "$nodes" -gt 1 ]; then
  command -v ip >/dev/null && command -v nsenter >/dev/null && command -v unshare >/dev/null \
    || die "--nodes $nodes needs ip (iproute2), nsenter and unshare (util-linux)"
  if ! ip netns list >/dev/null 2>&1 || ! unshare --uts true 2>/dev/null; then
    die "--nodes $nodes needs network and UTS namespaces, which this machine does not allow (a container without CAP_SYS_ADMIN?): use --nodes 1"
  fi
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "bridge $BRIDGE $NET.1/24"
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.1/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  # Docker sets the FORWARD policy to DROP and bridged frames pass through iptables: let the
  # nodes' traffic through the bridge (gloo between nodes).
  if command -v iptables >/dev/null && ! iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT 2>/dev/null; then
    iptables -I FORWARD 1 -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT
  fi
  for i in $(seq "$nodes"); do
    name=node$i; ns=$(netns_of "$name")
    if ! ip netns list | grep -qx "$ns\( .*\)\?"; then
      log "namespace $ns: $name at $NET.1$i"
      ip netns add "$ns"
    fi
    if ! ip link show "dnbveth$i" >/dev/null 2>&1; then
      ip netns exec "$ns" ip link del eth0 2>/dev/null || true
      ip link add "dnbveth$i" type veth peer name eth0 netns "$ns"
      ip link set "dnbveth$i" master "$BRIDGE" up
      ip netns exec "$ns" ip addr add "$NET.1$i/24" dev eth0
    fi
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip route replace default via "$NET.1"
    # Bound over /etc/hosts in the node's own mount namespace when its slurmd starts.
    mkdir -p "/etc/netns/$ns"
    {
      printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$name"
      printf '%s.1\t%s\n' "$NET" "$head"
      for j in $(seq "$nodes"); do [ "$j" = "$i" ] || printf '%s.1%s\tnode%s\n' "$NET" "$j" "$j"; done
    } >"/etc/netns/$ns/hosts.new"
    mv "/etc/netns/$ns/hosts.new" "/etc/netns/$ns/hosts"
  done
  # The host (where sbatch and `dnnbench report` run) knows every node by name.
  hosts=$(grep -v ' # dnnbench-node$' /etc/hosts || true)
  for i in $(seq 9); do
    [ "$i" -le "$nodes" ] && hosts+=$'\n'"$NET.1$i node$i # dnnbench-node"
  done
  if [ "$hosts" != "$(cat /etc/hosts)" ]; then
    # /etc/hosts may be a bind mount (containers): rewrite it in place, not by rename
    printf '%s\n' "$hosts" >/etc/hosts
  fi
fi

if [ "$(cat $conf 2>/dev/null)" != "$want" ]; then
  log "writing $conf ($nodes node(s): $list, $cpus CPUs)"
  mkdir -p /etc/slurm
  printf '%s\n' "$want" >$conf
  pkill -x slurmctld 2>/dev/null || true
  pkill -x slurmd 2>/dev/null || true
  for _ in $(seq 20); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 0.5; done
fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
for name in "${names[@]}"; do [ "$nodes" = 1 ] || mkdir -p "/var/spool/slurmd/$name"; done
chown munge:munge /run/munge 2>/dev/null || true

if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  log "starting munged"
  su -s /bin/sh munge -c /usr/sbin/munged
fi
pgrep -x slurmctld >/dev/null || { log "starting slurmctld"; slurmctld; }
if [ "$nodes" = 1 ]; then
  pgrep -x slurmd >/dev/null || { log "starting slurmd"; slurmd; }
else
  for name in "${names[@]}"; do
    pid=$(cat "/run/slurmd-$name.pid" 2>/dev/null || true)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      log "starting slurmd -N $name in namespace $(netns_of "$name")"
      # Not `ip netns exec`: it mounts a new /sys without the cgroup tree slurmd reads.
      ns=$(netns_of "$name")
      nsenter --net="/run/netns/$ns" unshare --uts --mount sh -c \
        "mount --bind /etc/netns/$ns/hosts /etc/hosts && hostname $name && exec slurmd -N $name"
    fi
  done
fi

# A restarted node's slurmd registers within seconds on a quiet machine; on a busy one (CI at load
# 7-14, right after a test killed a node) it took over a minute: wait up to 3.
for name in "${names[@]}"; do
  for _ in $(seq 180); do
    state=$(sinfo -h -n "$name" -o %T 2>/dev/null || true)
    case "$state" in idle|mixed|allocated) break ;; esac
    case "$state" in down*|drain*) scontrol update nodename="$name" state=resume 2>/dev/null || true ;; esac
    sleep 1
  done
  case "$state" in
    idle|mixed|allocated) log "slurm $(sinfo -V | awk '{print $2}'): node $name $state" ;;
    *) echo "setup-slurm: node $name is '${state:-unknown}', see /var/log/slurm/" >&2
       tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd*.log >&2 || true
       exit 1 ;;
  esac
done

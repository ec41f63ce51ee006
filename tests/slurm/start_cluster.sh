#!/usr/bin/env bash
# A single-node Slurm cluster on this machine for the Slurm tests (munged + slurmctld + slurmd,
# one partition "debug" holding this node with its real CPUs and memory). Idempotent: when the
# cluster already answers with its node up, it does nothing. Needs root and apt (Debian/Ubuntu).
# Used by: .ci/run before `make test`, or by hand:  sudo tests/slurm/start_cluster.sh
# On failure it says why (on stderr and in $STATUS) and exits 1; the Slurm tests then skip with
# that reason. Logs: /var/log/slurm/slurmctld.log, /var/log/slurm/slurmd.log, /var/log/munge/munged.log.
set -uo pipefail

STATUS=${TOOLSENSE_SLURM_STATUS:-/tmp/toolsense-slurm/status}
ERR=/tmp/toolsense-slurm
CONF=/etc/slurm/slurm.conf
NODE=$(hostname -s)
mkdir -p "$(dirname "$STATUS")" "$ERR" 2>/dev/null || true

fail() {
  { echo "Slurm test cluster not started: $1"; [ -n "${2:-}" ] && [ -f "$2" ] && { echo "--- tail of $2"; tail -n 20 "$2"; }; } | tee "$STATUS" >&2
  exit 1
}

node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n 1; }
up() { case "$(node_state)" in idle*|mixed*|allocated*|completing*) return 0 ;; *) return 1 ;; esac; }

if command -v sinfo >/dev/null && up; then
  echo "Slurm test cluster already up: node $NODE $(node_state)" | tee "$STATUS"
  exit 0
fi
[ "$(id -u)" = 0 ] || fail "not root (uid $(id -u)); run: sudo $0"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || fail "no slurmctld/munged and no apt-get to install slurm-wlm and munge"
  echo "installing slurm-wlm and munge (apt-get) ..."
  export DEBIAN_FRONTEND=noninteractive
  apt_log=$ERR/apt.log
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } >"$apt_log" 2>&1 ||
    fail "apt-get install slurm-wlm munge failed" "$apt_log"
fi

# munge: a key, then the daemon (as the munge user the package created).
mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none || fail "cannot write /etc/munge/munge.key"
fi
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge 2>/dev/null
chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key && chmod 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- munged 2>"$ERR/munged.err" || fail "munged did not start" "$ERR/munged.err"
  sleep 1
  munge -n | unmunge >/dev/null 2>&1 || fail "munge credentials do not round-trip" /var/log/munge/munged.log
fi

# slurm.conf: this node exactly as slurmd sees it (CPUs, sockets, cores, RealMemory), so jobs
# asking for what the machine has are scheduled; CPUs are the consumable (1-CPU jobs run side by side).
HW=$(slurmd -C 2>/dev/null | head -n 1)
case "$HW" in NodeName=*) ;; *) fail "slurmd -C did not describe this node: $HW" ;; esac
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
NEW=$(cat <<EOF
# Written by toolsense tests/slurm/start_cluster.sh: a single-node test cluster.
ClusterName=toolsense
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmdTimeout=300
$HW State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
)
if [ "$(cat "$CONF" 2>/dev/null)" != "$NEW" ]; then
  printf '%s\n' "$NEW" >"$CONF" || fail "cannot write $CONF"
  for pidf in /run/slurmctld.pid /run/slurmd.pid; do  # our own daemons, restarted on the new config
    [ -s "$pidf" ] && kill "$(cat "$pidf")" 2>/dev/null
  done
  sleep 1
fi

pgrep -x slurmctld >/dev/null || slurmctld 2>"$ERR/slurmctld.err" || fail "slurmctld did not start" /var/log/slurm/slurmctld.log
pgrep -x slurmd >/dev/null || slurmd 2>"$ERR/slurmd.err" || fail "slurmd did not start" /var/log/slurm/slurmd.log

for _ in $(seq 1 30); do
  if up; then
    echo "Slurm test cluster up: node $NODE $(node_state), partition debug ($HW)" | tee "$STATUS"
    exit 0
  fi
  case "$(node_state)" in down*|drain*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 ;; esac
  sleep 1
done
pgrep -x slurmctld >/dev/null || fail "slurmctld exited" /var/log/slurm/slurmctld.log
fail "node $NODE is '$(node_state)' after 30 s (sinfo: $(sinfo -h 2>&1 | head -n 3))" /var/log/slurm/slurmd.log

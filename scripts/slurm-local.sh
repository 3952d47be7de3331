#!/usr/bin/env bash
# A one-node Slurm on this machine, for trying `inductionlab sweep --executor slurm` without a cluster.
#
#   scripts/slurm-local.sh          install (Debian packages), configure and start munged, slurmctld, slurmd;
#                                   wait until `sinfo` shows the node idle
#   scripts/slurm-local.sh stop     stop the three daemons (by their pid files)
#   scripts/slurm-local.sh status   show whether they run, and `sinfo`
#
# Needs root and apt-get (Debian/Ubuntu).  Works without systemd: the daemons are started directly.  Safe to run
# again: installed packages, an existing munge key and running daemons are kept; a changed slurm.conf restarts
# the Slurm daemons.  The node has no accounting database, so `sacct` reports "accounting storage is disabled";
# jobs, `sbatch`, `squeue`, `scancel` and `sinfo` work.
set -euo pipefail

CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
SPOOL=/var/spool/slurm # slurmctld state (StateSaveLocation) and slurmd spool (SlurmdSpoolDir) below it
LOGS=/var/log/slurm
MUNGE_KEY=/etc/munge/munge.key
MUNGE_PID=/run/munge/munged.pid
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
NODE=$(hostname -s)

log() { echo "slurm-local: $*" >&2; }

# Whether the process named in pid file $1 runs.
running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Stop the process named in pid file $1 (SIGTERM, then SIGKILL after 10 s), and remove the pid file.
stop_pid() {
	local file=$1 name=$2 pid
	if running "$file"; then
		pid=$(cat "$file")
		log "stopping $name (pid $pid)"
		kill "$pid"
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	fi
	rm -f "$file"
}

stop_all() {
	stop_pid "$SLURMD_PID" slurmd
	stop_pid "$CTLD_PID" slurmctld
	stop_pid "$MUNGE_PID" munged
}

case "${1:-start}" in
stop)
	stop_all
	log "stopped"
	exit 0
	;;
status)
	for pair in "munged:$MUNGE_PID" "slurmctld:$CTLD_PID" "slurmd:$SLURMD_PID"; do
		if running "${pair#*:}"; then echo "${pair%%:*}: running (pid $(cat "${pair#*:}"))"; else echo "${pair%%:*}: stopped"; fi
	done
	running "$CTLD_PID" && sinfo
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 [start|stop|status]" >&2
	exit 2
	;;
esac

if [[ $(id -u) -ne 0 ]]; then
	echo "slurm-local: run as root (it installs packages and starts daemons)" >&2
	exit 1
fi

# 1. Packages (slurm-wlm pulls slurmctld and slurmd; munge authenticates the daemons to each other).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
	log "installing slurm-wlm and munge"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends slurm-wlm munge
fi

# 2. Munge: a key (the package usually creates one) and the daemon, run as the munge user.
if [[ ! -s $MUNGE_KEY ]]; then
	log "creating $MUNGE_KEY"
	install -d -o munge -g munge -m 0700 /etc/munge
	dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none
fi
chown munge:munge "$MUNGE_KEY"
chmod 0400 "$MUNGE_KEY"
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
if ! running "$MUNGE_PID"; then
	log "starting munged"
	runuser -u munge -- /usr/sbin/munged
fi

# 3. slurm.conf for this host: one node with all its CPUs, memory a bit below the machine's (slurmd refuses a
#    node that reports less than RealMemory), one partition "debug".  No cgroups: processes are tracked by
#    /proc (proctrack/linuxproc) and tasks are not bound (task/none), which works in containers too.
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
real_mem=$((mem_mb * 9 / 10))
install -d -m 0755 "$CONF_DIR" "$LOGS"
install -d -o slurm -g slurm -m 0755 "$SPOOL" "$SPOOL/ctld"
install -d -m 0755 "$SPOOL/d"
chown slurm:slurm "$LOGS"
new_conf=$(
	cat <<EOF
# Written by scripts/slurm-local.sh: a one-node Slurm on $NODE.
ClusterName=local
SlurmctldHost=$NODE
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/d
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
NodeName=$NODE CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
)
if [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$new_conf" ]]; then
	log "writing $CONF (node $NODE: $cpus CPUs, RealMemory=$real_mem MB)"
	printf '%s\n' "$new_conf" >"$CONF"
	# A running controller or node daemon read the old file: restart them.
	stop_pid "$SLURMD_PID" slurmd
	stop_pid "$CTLD_PID" slurmctld
fi

# 4. The Slurm daemons (each puts itself in the background and writes its pid file).
if ! running "$CTLD_PID"; then
	log "starting slurmctld"
	slurmctld
fi
if ! running "$SLURMD_PID"; then
	log "starting slurmd"
	slurmd
fi

# 5. Wait until the node is idle (or busy with jobs); resume it if a past stop left it down or drained.
for i in $(seq 60); do
	state=$(sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -n1 || true)
	case "$state" in
	idle | mixed | allocated | completing) break ;;
	down* | drain* | fail*) scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
	esac
	sleep 1
	if [[ $i -eq 60 ]]; then
		echo "slurm-local: node $NODE is '${state:-not answering}' after 60 s; see $LOGS/slurmctld.log and $LOGS/slurmd.log" >&2
		exit 1
	fi
done

sinfo
log "ready: try  sbatch --wrap hostname  then  squeue; stop the daemons with:  $0 stop"

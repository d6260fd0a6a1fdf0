#!/usr/bin/env bash
# slurm-up.sh: a real Slurm (Debian slurm-wlm + munge) on the nodes of up.sh: slurmctld on
# the login node, one slurmd per node. Then: export SLURM_CONF=$EZSIM_DIR/slurm/slurm.conf
# EZSIM_GPUS=G gives every node G generic "gpu" resources (counted only: no device files), so
# jobs can ask for --gpus-per-node and srun steps for --gpus-per-node.
set -euo pipefail
D=${EZSIM_DIR:-/var/tmp/ezsim}
NET=${EZSIM_NET:-10.250.0}
here=$(dirname "$(readlink -f "$0")")
export PATH=$PATH:/usr/sbin:/sbin
command -v slurmctld >/dev/null || { echo "cluster-sim: slurm-wlm is missing: run scripts/install-deps.sh" >&2; exit 1; }
N=$(wc -l < "$D/hostfile")
S="$D/slurm"
mkdir -p "$S/ctld"
GPUS=${EZSIM_GPUS:-0}
GRES_TYPES="" NODE_GRES=""
rm -f "$S/gres.conf"
if [ "$GPUS" -gt 0 ]; then
  GRES_TYPES="GresTypes=gpu" NODE_GRES="Gres=gpu:$GPUS"
  # Slurm drops GPUs without File=: empty stand-ins for the device files (cgroup device
  # constraints are off here, so nothing ever opens them).
  mkdir -p "$S/dev"
  for g in $(seq 0 $((GPUS - 1))); do : > "$S/dev/gpu$g"; done
  printf "AutoDetect=off\nNodeName=node[1-%s] Name=gpu File=%s/dev/gpu[0-%s]\n" "$N" "$S" "$((GPUS - 1))" \
    > "$S/gres.conf"
fi
cat > "$S/slurm.conf" <<CFG
ClusterName=ezsim
SlurmctldHost=login($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/d-%n
SlurmctldPidFile=$S/ctld.pid
SlurmdPidFile=$S/d-%n.pid
SlurmctldLogFile=$S/ctld.log
SlurmdLogFile=$S/d-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
$GRES_TYPES
SlurmctldPort=6817
SlurmdPort=6818
SlurmdTimeout=30
NodeName=node[1-$N] NodeAddr=$NET.[11-$((10 + N))] CPUs=$(nproc) RealMemory=1000 $NODE_GRES State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CFG
export SLURM_CONF="$S/slurm.conf"
if ! munge -n >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge
  chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged
fi
"$here/exec.sh" slurmctld
for i in $(seq 1 "$N"); do "$here/exec.sh" -n "node$i" slurmd; done
for _ in $(seq 1 150); do
  idle=$("$here/exec.sh" sinfo -h -t idle -o %D 2>/dev/null | head -1)
  [ "${idle:-0}" = "$N" ] && { echo "cluster-sim: slurm up ($N idle nodes); export SLURM_CONF=$S/slurm.conf"; exit 0; }
  sleep 0.2
done
echo "cluster-sim: slurm nodes did not become idle (see $S/*.log)" >&2
exit 1

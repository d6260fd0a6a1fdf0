#!/usr/bin/env bash
# slurm-down.sh: stop the slurmctld and slurmd of slurm-up.sh (munged is left running).
D=${EZSIM_DIR:-/var/tmp/ezsim}
S="$D/slurm"
for f in "$S"/d-*.pid "$S/ctld.pid"; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
sleep 0.5
rm -rf "$S"
echo "cluster-sim: slurm down"

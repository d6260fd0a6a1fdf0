#!/usr/bin/env bash
# down.sh: remove what up.sh (and slurm-up.sh) made, by pid files and namespace prefix only.
D=${EZSIM_DIR:-/var/tmp/ezsim}
P=${EZSIM_PREFIX:-ezsim}
here=$(dirname "$(readlink -f "$0")")
[ -d "$D/slurm" ] && "$here/slurm-down.sh"
for f in "$D"/nodes/*/sshd.pid "$D"/nodes/*/launcher.pid "$D/hub.pid"; do
  [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
done
sleep 0.2
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$P-"); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "/etc/netns/$ns"
done
rm -rf "$D"
echo "cluster-sim: down"

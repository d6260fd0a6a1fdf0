#!/usr/bin/env bash
# Ctrl-C of a yeet over the launcher transport, on a simulated 4-node cluster with real Slurm
# (srun starts the agents; relays over TCP, fan-out 1): 20,000 small files and 150 MB in flight,
# SIGINT to the head once node4's work directory holds FILES entries. For each run: how long
# ezpz took to return, how many of the run's processes (agents, relays, their clients) still ran
# at that moment, and how long after it every node was clean (no process, no work directory).
# A step's end kills what is left in it (Slurm's proctrack/cgroup): what still runs when ezpz
# returns is what a real cluster would kill half-way through removing its work.
# Needs root. Usage: scripts/bench/yeet_stop.sh [path/to/ezpz] [path/to/anchor-ezpz]
#   (RUNS=3 FILES=5000; the anchor, an earlier build, runs interleaved with the first)
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=("$(readlink -f "${1:-build/release/ezpz}")")
[ -n "${2:-}" ] && bins+=("$(readlink -f "$2")")
RUNS=${RUNS:-3}; FILES=${FILES:-5000}
export EZSIM_DIR=/var/tmp/ezpz-bench-stop EZSIM_PREFIX=ezbst EZSIM_NET=10.250.37
sim=$PWD/scripts/cluster-sim
D=$EZSIM_DIR
W=/var/tmp/ezpz-bench-stop-src
nodes="node1 node2 node3 node4"
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1; rm -rf "$W"' EXIT
"$sim/up.sh" 4 >/dev/null
"$sim/slurm-up.sh" >/dev/null
export SLURM_CONF="$D/slurm/slurm.conf"
mkdir -p "$D/bin" "$D/home" "$W/data"
for i in "${!bins[@]}"; do cp "${bins[$i]}" "$D/bin/ezpz$i"; done
cd "$D"
python3 -c '
import os, sys
for d in range(40):
    os.makedirs(f"{sys.argv[1]}/a-many/{d}")
    for f in range(500):
        open(f"{sys.argv[1]}/a-many/{d}/{f}", "w").write(f"{d}.{f}")' "$W/data"
head -c 150000000 /dev/urandom > "$W/data/huge"
on() { nsenter -t "$(cat "$D/slurm/d-$1.pid")" -n -m -u sh -c "$2"; }
ours="(__yeet-agent|__yeet-relay|__agent-stdio|__yeet-janitor)|srun --overlap"
clean() {  # true when no process of the run is left and no work directory on any node
  local n
  "$sim/pgrep.sh" "$ours" >/dev/null && return 1
  for n in $nodes; do [ -z "$(on "$n" 'ls -d /tmp/stopped.ezpz-* 2>/dev/null')" ] || return 1; done
}
one() {  # one BIN-INDEX: prints "return_s running_at_return clean_after_s"
  local ezpz="$D/bin/ezpz$1" pid head entries=0 t0 t1 running _
  "$sim/exec.sh" env EZPZ_MACHINE=local HOME="$D/home" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/stopped \
    --fanout 1 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do
    entries=$(on node4 'find /tmp/stopped.ezpz-tmp-* 2>/dev/null | wc -l')
    [ "$entries" -ge "$FILES" ] && break
    sleep 0.05
  done
  head=$(pgrep -o -f -- "^$ezpz yeet $W/data --dst /tmp/stopped")
  t0=$(date +%s.%N)
  kill -INT "$head"
  wait "$pid" || true
  t1=$(date +%s.%N)
  running=$("$sim/pgrep.sh" -c "$ours" || true)
  for _ in $(seq 1 600); do clean && break; sleep 0.05; done
  python3 -c "import sys, time; t0, t1 = map(float, sys.argv[1:]); print(f'{t1 - t0:.2f} ${running} {time.time() - t1:.2f}')" "$t0" "$t1"
  for n in $nodes; do on "$n" 'rm -rf /tmp/stopped /tmp/stopped.ezpz-*'; done
}
labels=(ezpz anchor)
for i in "${!bins[@]}"; do echo "${labels[$i]}: ${bins[$i]}"; done
echo "(clean after: from ezpz's return until a check finds nothing; one check takes ~0.2 s here)"
printf '%-14s %10s %18s %16s\n' "binary (run)" "return s" "running at return" "clean after s"
for r in $(seq 1 "$RUNS"); do
  for i in "${!bins[@]}"; do
    out=$(one "$i")
    read -r ret running after <<<"$out"
    printf '%-14s %10s %18s %16s\n' "${labels[$i]} ($r)" "$ret" "$running" "$after"
  done
done

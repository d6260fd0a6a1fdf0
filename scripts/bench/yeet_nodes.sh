#!/usr/bin/env bash
# yeet to every node, side by side in one run: ezpz yeet (streaming relay tree) against ezpz's
# algorithm (rsync, greedy, 8 per source), unshaped (CPU-bound: all nodes share this machine's
# cores) and with every node's link shaped by a tc token bucket in both directions ($RATE,
# default 200mbit). yeet runs on the job's first node, whose link is then the source NIC.
# Payload: a venv plus a copy of Debian's dist-packages (about 300 MB in 11,000 files).
# Usage: scripts/bench/yeet_nodes.sh [path/to/ezpz]   (NODES=6 RATE=200mbit FANOUT=...)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz_src=$(readlink -f "${1:-build/release/ezpz}")
N=${NODES:-6}; RATE=${RATE:-200mbit}
export EZSIM_DIR=/var/tmp/ezpz-bench-nodes EZSIM_PREFIX=ezbench EZSIM_NET=10.250.31 EZSIM_TMP_SIZE=2g
sim=scripts/cluster-sim
P=/var/tmp/ezpz-bench-payload
command -v rsync >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null
scripts/bench/make_payload.sh "$P"
echo "payload: $(find "$P/venv" -type f | wc -l) files, $(du -sm "$P/venv" | cut -f1) MB; $N nodes on $(nproc) cores"
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" "$N" >/dev/null
mkdir -p "$EZSIM_DIR/bin"; cp "$ezpz_src" "$EZSIM_DIR/bin/ezpz"
ezpz="$EZSIM_DIR/bin/ezpz"
hosts=$(tr '\n' ' ' < "$EZSIM_DIR/hostfile")
others=$(tail -n +2 "$EZSIM_DIR/hostfile" | tr '\n' ' ')
on1() { "$sim/exec.sh" -n node1 "$@"; }
clean() { for h in $hosts; do "$sim/exec.sh" -n "$h" rm -rf /tmp/bench-ezpz /tmp/bench-rsync; done; }
shape() {
  for i in $(seq 1 "$N"); do
    ip netns exec "ezbench-node$i" tc qdisc replace dev eth0 root tbf rate "$RATE" burst 64kb latency 100ms
    ip netns exec ezbench-hub tc qdisc replace dev "v$i" root tbf rate "$RATE" burst 64kb latency 100ms
  done
}
run() {  # run LABEL CMD...: seconds
  local s e; s=$(date +%s.%N)
  "${@:2}" >/tmp/ezpz-bench-last.log 2>&1 || { echo "$1 failed:"; tail -5 /tmp/ezpz-bench-last.log; }
  e=$(date +%s.%N); printf '  %-52s %7.2f s\n' "$1" "$(echo "$e - $s" | bc)"
}
for regime in unshaped "$RATE links"; do
  echo "-- $regime"
  [ "$regime" = unshaped ] || shape
  clean; sync
  # Relays run in the nodes' network namespaces but share this machine's process table: their
  # peak resident memory (VmHWM) while the broadcast runs, read five times a second (a `ps` of
  # every process twenty times a second took a share of the two cores the measured run needs).
  ( peak=0; while [ ! -f /tmp/ezpz-bench-stop ]; do
      for pid in $(pgrep -f -- __yeet-relay); do
        kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
      done
      echo "$peak" > /tmp/ezpz-bench-peak; sleep 0.2; done ) &
  sampler=$!; rm -f /tmp/ezpz-bench-stop
  run "ezpz yeet (tree, fanout ${FANOUT:-2}, adaptive, libssh)" on1 env EZPZ_MACHINE=local "$ezpz" yeet "$P/venv" --dst /tmp/bench-ezpz \
      --hostfile "$EZSIM_DIR/hostfile" --copy ${FANOUT:+--fanout "$FANOUT"}
  touch /tmp/ezpz-bench-stop; wait "$sampler" 2>/dev/null || true
  echo "  peak relay memory (RSS): $(( $(cat /tmp/ezpz-bench-peak) / 1024 )) MB"
  grep -E '^  stream:' /tmp/ezpz-bench-last.log || true
  wipe() { on1 rm -rf /tmp/bench-ezpz; for h in $others; do "$sim/exec.sh" -n "$h" rm -rf /tmp/bench-ezpz; done; }
  wipe
  run "ezpz yeet (tree, fixed zstd level 3)" on1 env EZPZ_MACHINE=local "$ezpz" yeet "$P/venv" --dst /tmp/bench-ezpz \
      --hostfile "$EZSIM_DIR/hostfile" --copy --stream-level 3 ${FANOUT:+--fanout "$FANOUT"}
  grep -E '^  stream:' /tmp/ezpz-bench-last.log || true
  wipe
  run "ezpz yeet (tree, --ssh-command ssh: OpenSSH)" on1 env EZPZ_MACHINE=local "$ezpz" yeet "$P/venv" \
      --dst /tmp/bench-ezpz --hostfile "$EZSIM_DIR/hostfile" --copy --ssh-command ssh ${FANOUT:+--fanout "$FANOUT"}
  wipe
  run "ezpz yeet --strategy greedy (8 per source)" on1 env EZPZ_MACHINE=local "$ezpz" yeet "$P/venv" \
      --dst /tmp/bench-ezpz --hostfile "$EZSIM_DIR/hostfile" --copy --strategy greedy
  run "ezpz's algorithm (rsync greedy, 8 per source)" on1 python3 scripts/bench/rsync_greedy.py "$P/venv" /tmp/bench-rsync $others
  a=$("$sim/exec.sh" -n "node$N" sh -c 'cd /tmp/bench-ezpz && find . -type f ! -name "*.pyc" | wc -l')
  b=$("$sim/exec.sh" -n "node$N" sh -c 'cd /tmp/bench-rsync && find . -type f ! -name "*.pyc" | wc -l')
  echo "  files on node$N: ezpz $a, rsync $b"
done

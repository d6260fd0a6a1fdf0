#!/usr/bin/env bash
# yeet to every node, NEW against OLD (the anchor) in one run, on one simulated cluster (the
# payload and test bed of yeet_nodes.sh): the relay tree over the built-in libssh, over OpenSSH
# (--ssh-command ssh), and --strategy greedy, each a full copy (--copy) from node1, in rounds
# (every case with both binaries once a round), best of RUNS. Unshaped links (CPU-bound: every
# node shares this machine's cores), or with every link shaped as yeet_nodes.sh does (RATE=200mbit).
# CASES picks some of: tree ssh greedy. For a change that must not move the numbers.
# Needs root. Usage: scripts/bench/yeet_nodes_ab.sh NEW_EZPZ OLD_EZPZ   (NODES=6 RUNS=3 RATE= CASES=)
set -euo pipefail
cd "$(dirname "$0")/../.."
new_src=$(readlink -f "$1"); old_src=$(readlink -f "$2")
N=${NODES:-6}; RUNS=${RUNS:-3}
export EZSIM_DIR=/var/tmp/ezpz-bench-nodes EZSIM_PREFIX=ezbench EZSIM_NET=10.250.31 EZSIM_TMP_SIZE=2g
sim=scripts/cluster-sim
P=/var/tmp/ezpz-bench-payload
scripts/bench/make_payload.sh "$P"
echo "payload: $(find "$P/venv" -type f | wc -l) files, $(du -sm "$P/venv" | cut -f1) MB; $N nodes on $(nproc) cores"
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" "$N" >/dev/null
mkdir -p "$EZSIM_DIR/bin"
cp "$new_src" "$EZSIM_DIR/bin/ezpz-new"; cp "$old_src" "$EZSIM_DIR/bin/ezpz-old"
hosts=$(tr '\n' ' ' < "$EZSIM_DIR/hostfile")
if [ -n "${RATE:-}" ]; then  # a tc token bucket on every link, both directions (as yeet_nodes.sh)
  for i in $(seq 1 "$N"); do
    ip netns exec "ezbench-node$i" tc qdisc replace dev eth0 root tbf rate "$RATE" burst 64kb latency 100ms
    ip netns exec ezbench-hub tc qdisc replace dev "v$i" root tbf rate "$RATE" burst 64kb latency 100ms
  done
fi
on1() { "$sim/exec.sh" -n node1 "$@"; }
wipe() { for h in $hosts; do "$sim/exec.sh" -n "$h" rm -rf /tmp/bench-ezpz; done; sync; }
once() {  # once BINARY CASE: seconds of one full copy to every node
  local ez=$EZSIM_DIR/bin/ezpz-$1 extra=() s e
  case $2 in ssh) extra=(--ssh-command ssh) ;; greedy) extra=(--strategy greedy) ;; esac
  wipe
  s=$(date +%s.%N)
  on1 env EZPZ_MACHINE=local "$ez" yeet "$P/venv" --dst /tmp/bench-ezpz --hostfile "$EZSIM_DIR/hostfile" --copy \
      "${extra[@]}" >/tmp/ezpz-bench-ab.log 2>&1 || { echo "$1 $2 failed:" >&2; tail -5 /tmp/ezpz-bench-ab.log >&2; }
  e=$(date +%s.%N)
  echo "$e - $s" | bc
}
all=(tree ssh greedy)
all_labels=("relay tree, built-in libssh" "relay tree, --ssh-command ssh (OpenSSH)" "--strategy greedy (8 per source)")
cases=(); labels=()
for i in "${!all[@]}"; do
  [[ " ${CASES:-tree ssh greedy} " == *" ${all[$i]} "* ]] && { cases+=("${all[$i]}"); labels+=("${all_labels[$i]}"); }
done
once old tree >/dev/null  # warm-up: the payload in the page cache, sshd's first start
declare -A best
for _ in $(seq "$RUNS"); do
  for c in "${cases[@]}"; do
    for b in old new; do
      d=$(once "$b" "$c")
      best[$b$c]=$(echo "if (${best[$b$c]:-999999} < $d) ${best[$b$c]:-999999} else $d" | bc)
    done
  done
done
wipe
printf '%-46s %9s %9s %8s\n' "-- best of $RUNS rounds, $N nodes${RATE:+, $RATE links}" "old (s)" "new (s)" "new/old"
for i in "${!cases[@]}"; do
  c=${cases[$i]}
  printf '  %-44s %9.2f %9.2f %8.2f\n' "${labels[$i]}" "${best[old$c]}" "${best[new$c]}" \
    "$(echo "scale=3; ${best[new$c]} / ${best[old$c]}" | bc)"
done

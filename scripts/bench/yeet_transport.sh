#!/usr/bin/env bash
# yeet's transports side by side in one run, on one simulated cluster with real Slurm, every case
# from the job's first node (node1: its link is the source NIC) inside one sbatch job:
#   ezpz yeet --transport launcher   (agents started by srun, relays over TCP, encrypted)
#   ezpz yeet --transport launcher --no-encrypt
#   ezpz yeet --transport ssh        (the same relay tree over the built-in libssh)
#   Slurm's own route: `ezpz tar-env` of the venv, sbcast of the tarball to every node, then
#     srun extraction with tar (what OLCF documents for Frontier)
#   rsync greedy (scripts/bench/rsync_greedy.py: ezpz's original algorithm)
# unshaped (CPU-bound: every node shares this machine's cores) and with every node's link shaped
# by a tc token bucket in both directions (RATE); then the time until every relay is ready on
# READY_NODES nodes (a 1-byte payload: connection and start-up only), launcher against ssh.
# Payload: make_payload.sh (a venv plus Debian's dist-packages, ~300 MB in ~11,000 files).
# Each case runs once a round, RUNS rounds (the cases interleaved), best of them; CASES picks some.
# Needs root. Usage: scripts/bench/yeet_transport.sh [path/to/ezpz]
#   (NODES=8 RATE=200mbit READY_NODES=32 RUNS=2 CASES="launcher plain ssh sbcast rsync" REGIMES="unshaped shaped")
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz_src=$(readlink -f "${1:-build/release/ezpz}")
N=${NODES:-8}; RATE=${RATE:-200mbit}; R=${READY_NODES:-32}; RUNS=${RUNS:-2}
export EZSIM_DIR=/var/tmp/ezpz-bench-transport EZSIM_PREFIX=ezbtr EZSIM_NET=10.250.33 EZSIM_TMP_SIZE=2g
sim=$PWD/scripts/cluster-sim
D=$EZSIM_DIR
P=/var/tmp/ezpz-bench-payload
command -v rsync >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null
scripts/bench/make_payload.sh "$P"
echo "payload: $(find "$P/venv" -type f | wc -l) files, $(du -sm "$P/venv" | cut -f1) MB; $N nodes on $(nproc) cores"

up() {  # up N: the test bed with N nodes and Slurm
  "$sim/down.sh" >/dev/null 2>&1 || true
  "$sim/up.sh" "$1" >/dev/null
  "$sim/slurm-up.sh" >/dev/null
  export SLURM_CONF="$D/slurm/slurm.conf"
  mkdir -p "$D/bin" "$D/out"
  cp "$ezpz_src" "$D/bin/ezpz"
  cp scripts/bench/rsync_greedy.py "$D/bin/"
}
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
shape() {
  for i in $(seq 1 "$N"); do
    ip netns exec "$EZSIM_PREFIX-node$i" tc qdisc replace dev eth0 root tbf rate "$RATE" burst 64kb latency 100ms
    ip netns exec "$EZSIM_PREFIX-hub" tc qdisc replace dev "v$i" root tbf rate "$RATE" burst 64kb latency 100ms
  done
}
# case NAME BODY: BODY runs as a job script on node1 (sbatch over all N nodes); prints its seconds.
job() {
  local name=$1 body=$2 nodes=${3:-$N}
  cat > "$D/out/$name.sh" <<EOF
#!/bin/bash
export EZPZ_MACHINE=local
others=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | tail -n +2 | tr '\n' ' ')
for h in \$(scontrol show hostnames "\$SLURM_JOB_NODELIST"); do
  srun -N1 -n1 -w "\$h" --overlap rm -rf /tmp/bench /tmp/bench.tar.zst /tmp/bench-src.tar.zst
done
s=\$(date +%s.%N)
$body
rc=\$?
e=\$(date +%s.%N)
echo "\$(echo "\$e - \$s" | bc) \$rc"
EOF
  chmod +x "$D/out/$name.sh"
  (cd "$D/out" && "$sim/exec.sh" sbatch --wait -N "$nodes" --output="$D/out/$name.out" --error="$D/out/$name.err" \
    "$D/out/$name.sh" >/dev/null) || true
  local line; line=$(tail -1 "$D/out/$name.out" 2>/dev/null || true)
  [ "${line##* }" = 0 ] || { echo "  ($name failed: $(tail -3 "$D/out/$name.err" 2>/dev/null | tr '\n' ' '))" >&2; }
  echo "${line%% *}"
}
ez=$D/bin/ezpz
read -r -a cases <<<"${CASES:-launcher plain ssh sbcast rsync}"
declare -A body=(
  [launcher]="$ez yeet $P/venv --dst /tmp/bench --copy --transport launcher >>$D/out/log.txt 2>&1"
  [plain]="$ez yeet $P/venv --dst /tmp/bench --copy --transport launcher --no-encrypt >>$D/out/log.txt 2>&1"
  [ssh]="$ez yeet $P/venv --dst /tmp/bench --copy --transport ssh >>$D/out/log.txt 2>&1"
  [sbcast]="$ez tar-env $P/venv -o /tmp/bench-src.tar.zst >/dev/null && sbcast -f /tmp/bench-src.tar.zst /tmp/bench.tar.zst && srun -N\$SLURM_NNODES --ntasks-per-node=1 --overlap sh -c 'mkdir -p /tmp/bench && tar -I zstd -xf /tmp/bench.tar.zst -C /tmp/bench && rm /tmp/bench.tar.zst'"
  [rsync]="python3 $D/bin/rsync_greedy.py $P/venv /tmp/bench \$others >/dev/null"
)
declare -A label=(
  [launcher]="ezpz yeet --transport launcher (srun, TCP, AES-GCM)"
  [plain]="ezpz yeet --transport launcher --no-encrypt"
  [ssh]="ezpz yeet --transport ssh (built-in libssh)"
  [sbcast]="tar-env + sbcast + srun tar -x (Slurm's route)"
  [rsync]="rsync greedy (rsync_greedy.py)"
)
up "$N"
best() { echo "if (${1:-999999} < $2) ${1:-999999} else $2" | bc; }
declare -A secs
for regime in ${REGIMES:-unshaped shaped}; do
  [ "$regime" = unshaped ] || { regime=$RATE; shape; }
  job warmup "${body[launcher]}" >/dev/null  # the payload in the page cache
  for _ in $(seq "$RUNS"); do
    for c in "${cases[@]}"; do
      t=$(job "$c" "${body[$c]}")
      [ -n "$t" ] && secs[$regime$c]=$(best "${secs[$regime$c]:-}" "$t")
    done
  done
done
printf '%-52s %10s %12s\n' "-- $N nodes, best of $RUNS" "unshaped" "$RATE"
for c in "${cases[@]}"; do
  printf '  %-50s %9ss %11ss\n' "${label[$c]}" "${secs[unshaped$c]:-?}" "${secs[$RATE$c]:-?}"
done

[ "$R" -gt 0 ] || exit 0
# Ready: a 1-byte payload to READY_NODES nodes (connections and relay start-up only).
N=$R up "$R"
mkdir -p "$D/one"; echo x > "$D/one/x"
printf '%-52s %10s\n' "-- until every relay is ready, $R nodes" "seconds"
declare -A ready
for _ in $(seq "$RUNS"); do
  for t in launcher ssh; do
    s=$(job "ready-$t" "$ez yeet $D/one --dst /tmp/bench --copy --transport $t >>$D/out/log.txt 2>&1" "$R")
    [ -n "$s" ] && ready[$t]=$(best "${ready[$t]:-}" "$s")
  done
done
for t in launcher ssh; do printf '  %-50s %9ss\n' "--transport $t" "${ready[$t]:-?}"; done

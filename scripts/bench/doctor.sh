#!/usr/bin/env bash
# ezpz doctor timings: the local tier with a python3 that imports torch (PY, default
# /usr/bin/python3): first run (nothing kept; median of 5) and again (median of 30, target
# < 300 ms), beside ANCHOR's (an older ezpz, when given) in the same run; then the per-node tier
# (--nodes) on 8 simulated nodes (median of 10 runs, target < 2 s) and on 100 (median of 5,
# target < 10 s; BIG=0 skips it, NODES=0 skips both); needs root for the simulated cluster.
# Usage: [ANCHOR=path/to/old/ezpz] scripts/bench/doctor.sh [path/to/ezpz]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/ezpz}")
[ -x "$bin" ] || { echo "no ezpz at $bin: build it (cmake --build --preset release) or pass its path" >&2; exit 1; }

# median_ms N CMD...: run CMD N times, print the median wall time in milliseconds.
median_ms() {
  local n=$1
  shift
  local times=()
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f\n", m/1000}'
}

echo "ezpz: $bin ($(file -b "$bin" | cut -d, -f1-2)); $(nproc) cores"
py=${PY:-/usr/bin/python3}
pybin=$(mktemp -d)
trap 'rm -rf "$pybin"' EXIT
ln -s "$py" "$pybin/python3"
echo "python3: $py ($("$py" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1))"
# local_tier LABEL EZPZ: its first run (nothing kept: a fresh EZPZ_HOME each) and its next runs.
local_tier() {
  local home
  home=$(mktemp -d)
  local first
  first=$(median_ms 5 sh -c 'rm -rf "$1/cache"; shift; exec env "$@"' sh "$home" EZPZ_HOME="$home" \
    PATH="$pybin:/usr/bin:/bin" WANDB_MODE=offline "$2" doctor)
  local again
  again=$(median_ms 30 env EZPZ_HOME="$home" PATH="$pybin:/usr/bin:/bin" WANDB_MODE=offline "$2" doctor)
  printf '  %-8s first run %8s ms   again %8s ms\n' "$1" "$first" "$again"
  rm -rf "$home"
}
echo "local tier (ezpz doctor): first run median of 5, again median of 30 (target again < 300 ms)"
[ -z "${ANCHOR:-}" ] || local_tier old "$ANCHOR"
local_tier new "$bin"
[ "${NODES:-1}" != 0 ] || exit 0

if [ "$(id -u)" != 0 ]; then
  echo "per-node tier: skipped (the simulated cluster needs root)"
  exit 0
fi
sim=scripts/cluster-sim
export EZSIM_DIR=/var/tmp/ezpz-bench-doctor EZSIM_PREFIX=ezpzbd EZSIM_NET=10.250.25
"$sim/down.sh" >/dev/null 2>&1 || true
trap 'rm -rf "$pybin"; "$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" 8 >/dev/null
mkdir -p "$EZSIM_DIR/bin" "$EZSIM_DIR/home"
cp "$bin" "$EZSIM_DIR/bin/ezpz"
run=("$sim/exec.sh" env EZPZ_MACHINE=local HOME="$EZSIM_DIR/home" WANDB_MODE=offline "$EZSIM_DIR/bin/ezpz" doctor
  --hostfile "$EZSIM_DIR/hostfile" --nodes)
"${run[@]}" >/dev/null 2>&1 || true  # warm-up (host keys, page cache)
nodes_ms=$(median_ms 10 "${run[@]}")
echo "per-node tier (ezpz doctor --nodes, built-in libssh), 8 nodes, median of 10: ${nodes_ms} ms (target < 2000 ms)"
ssh_ms=$(median_ms 10 "${run[@]}" --ssh-command ssh)
echo "per-node tier (--ssh-command ssh), 8 nodes, median of 10: ${ssh_ms} ms"
exec_ms=$(median_ms 10 "$sim/exec.sh" true)
echo "  (of which entering the login namespace with exec.sh: ${exec_ms} ms)"
"${run[@]}" --all | grep -E '^\[.*\] (nodes|clock)'
"$sim/down.sh" >/dev/null 2>&1

big=${BIG:-100}
[ "$big" -gt 0 ] || exit 0
export EZSIM_DIR=/var/tmp/ezpz-bench-doctor-big EZSIM_PREFIX=ezpzbb EZSIM_NET=10.250.26
"$sim/down.sh" >/dev/null 2>&1 || true
"$sim/up.sh" "$big" >/dev/null
mkdir -p "$EZSIM_DIR/bin" "$EZSIM_DIR/home"
cp "$bin" "$EZSIM_DIR/bin/ezpz"
run=("$sim/exec.sh" env EZPZ_MACHINE=local HOME="$EZSIM_DIR/home" WANDB_MODE=offline "$EZSIM_DIR/bin/ezpz" doctor
  --hostfile "$EZSIM_DIR/hostfile" --nodes)
"${run[@]}" >/dev/null 2>&1 || true  # warm-up
big_ms=$(median_ms 5 "${run[@]}")
echo "per-node tier (ezpz doctor --nodes, built-in libssh), $big nodes, median of 5: ${big_ms} ms (target < 10000 ms)"
# Where the CPU goes: this host's ezpz and its ssh connections vs everything else on the machine
# (the simulated nodes' sshd, shell, start script and ezpz, all on these same cores).
cpu() { awk '/^cpu /{print $2+$3+$4, $5}' /proc/stat; }
read -r busy0 idle0 < <(cpu)
/usr/bin/time -o "$EZSIM_DIR/time" -f '%U %S' "${run[@]}" >/dev/null 2>&1 || true
head_cpu=$(tail -1 "$EZSIM_DIR/time")
read -r busy1 idle1 < <(cpu)
awk -v b=$((busy1 - busy0)) -v i=$((idle1 - idle0)) -v h="$head_cpu" 'BEGIN {
  split(h, t, " "); hc = t[1] + t[2]; tck = 100
  printf "  one run: machine busy %.1f CPU-s (idle %.1f), of which ezpz on the head with its connections %.1f CPU-s\n", b / tck, i / tck, hc }'
"${run[@]}" --all | grep -E '^\[.*\] (nodes|clock)'

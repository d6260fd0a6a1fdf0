#!/usr/bin/env bash
# yeet's CPU per node, side by side in one run on the simulated cluster: every process of a node
# (its sshd, its slurmd, and all they start) is put in a cpuacct cgroup of its own, so the CPU
# seconds (user + system) each node spends are read from the kernel, whatever the process:
#   ezpz yeet --transport ssh       (the relay tree over libssh; the head is node1)
#   ezpz yeet --transport launcher  (agents started by srun inside an sbatch job on every node)
#   rsync greedy                    (scripts/bench/rsync_greedy.py: ezpz's original algorithm)
#   one node's own `zstd -d | tar -x` of the venv as a zstd tar stream (the floor: nothing but
#   decompressing and writing the files)
# Each line: of the run whose receiving nodes spent the least, wall seconds, the head's CPU
# (node1: the source and its own copy), the mean CPU of a receiving node and the highest; then
# the median of the node means over the rounds (each round runs every case once; each round's
# node mean is listed after it), and the
# ratios of medians that #30 names. Unshaped: every node shares this machine's cores. The
# launcher case's wall time is yeet's own inside the job (sbatch --wait's job start and polling,
# ~10 s, left out); its nodes' CPU includes slurmd's and slurmstepd's work for the step.
# PROFILE=1: one more run of each yeet case under `perf record -a`, then the top symbols of every
# ezpz process and the top commands (give an unstripped binary, e.g. release linked without -s:
# cmake --preset release -B build/profile -DEZPZ_STRIP=OFF).
# OLD: a second ezpz (an earlier build) whose two yeet cases run beside the first in the same
# bed (cases ssh-old, launcher-old).
# Needs root. Usage: scripts/bench/yeet_cpu.sh [path/to/ezpz] [OLD]   (NODES=6 RUNS=2 CASES="ssh launcher rsync tar")
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz_src=$(readlink -f "${1:-build/release/ezpz}")
old_src=${2:+$(readlink -f "$2")}
N=${NODES:-6}; RUNS=${RUNS:-2}
export EZSIM_DIR=/var/tmp/ezpz-bench-cpu EZSIM_PREFIX=ezbcpu EZSIM_NET=10.250.35 EZSIM_TMP_SIZE=2g
sim=$PWD/scripts/cluster-sim
D=$EZSIM_DIR
P=/var/tmp/ezpz-bench-payload
CG=/sys/fs/cgroup/cpuacct
[ -d "$CG" ] || { echo "yeet_cpu: no cgroup v1 cpuacct at $CG: cannot count CPU per node" >&2; exit 1; }
command -v rsync >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null
command -v zstd >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zstd >/dev/null
scripts/bench/make_payload.sh "$P"
echo "payload: $(find "$P/venv" -type f | wc -l) files, $(du -sm "$P/venv" | cut -f1) MB; $N nodes on $(nproc) cores"

"$sim/down.sh" >/dev/null 2>&1 || true
cleanup() {
  [ "${PROFILE:-0}" = 1 ] && mkdir -p /var/tmp/ezpz-bench-cpu-perf && cp "$D"/out/perf-*.data /var/tmp/ezpz-bench-cpu-perf/ 2>/dev/null
  "$sim/down.sh" >/dev/null 2>&1
  for i in $(seq 1 "$N"); do rmdir "$CG/ezbcpu-node$i" 2>/dev/null || true; done
}
trap cleanup EXIT
"$sim/up.sh" "$N" >/dev/null
"$sim/slurm-up.sh" >/dev/null
export SLURM_CONF="$D/slurm/slurm.conf"
mkdir -p "$D/bin" "$D/out"
cp "$ezpz_src" "$D/bin/ezpz"
[ -z "$old_src" ] || cp "$old_src" "$D/bin/ezpz-old"
cp scripts/bench/rsync_greedy.py "$D/bin/"
# Every process in node I's network namespace (sshd, slurmd) goes into cgroup node I: what they
# start later is counted there too.
for i in $(seq 1 "$N"); do
  mkdir -p "$CG/ezbcpu-node$i"
  for pid in $(ip netns pids "ezbcpu-node$i"); do echo "$pid" > "$CG/ezbcpu-node$i/cgroup.procs" 2>/dev/null || true; done
done
# A stream like yeet's: the venv as a zstd tar without __pycache__ (yeet leaves it out, as rsync_greedy.py
# does), for the tar -x floor.
tar -C "$P/venv" --exclude=__pycache__ -cf - . | zstd -q -3 -T0 -o "$D/venv.tar.zst" -f

usage() { for i in $(seq 1 "$N"); do echo "$(cat "$CG/ezbcpu-node$i/cpuacct.usage")"; done; }
on_node() {  # on_node I CMD...: CMD inside node I's namespaces, counted in node I's cgroup
  local i=$1; shift
  "$sim/exec.sh" -n "node$i" sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG/ezbcpu-node$i" "$@"
}
wipe() { for i in $(seq 1 "$N"); do on_node "$i" rm -rf /tmp/bench /tmp/tarx; done; }
others=$(tail -n +2 "$D/hostfile" | tr '\n' ' ')
for b in ezpz ezpz-old; do
  cat > "$D/out/launcher-$b.sh" <<EOF
#!/bin/bash
export EZPZ_MACHINE=local
s=\$(date +%s.%N)
$D/bin/$b yeet $P/venv --dst /tmp/bench --copy --transport launcher
rc=\$?
echo "yeet wall \$(echo "\$(date +%s.%N) - \$s" | bc)"
exit \$rc
EOF
  chmod +x "$D/out/launcher-$b.sh"
done
run_case() {  # run_case NAME: runs it once
  local b=ezpz
  case $1 in *-old) b=ezpz-old ;; esac
  case $1 in
    ssh|ssh-old) on_node 1 env EZPZ_MACHINE=local "$D/bin/$b" yeet "$P/venv" --dst /tmp/bench --hostfile "$D/hostfile" \
           --copy --transport ssh ;;
    launcher|launcher-old) (cd "$D/out" && "$sim/exec.sh" sbatch --wait -N "$N" --output="$D/out/$1.out" \
           "$D/out/launcher-$b.sh") ;;
    rsync) on_node 1 python3 "$D/bin/rsync_greedy.py" "$P/venv" /tmp/bench $others ;;
    tar) on_node 2 sh -c "mkdir -p /tmp/tarx && zstd -q -d -c '$D/venv.tar.zst' | tar -x -C /tmp/tarx" ;;
  esac
}
read -r -a cases <<<"${CASES:-ssh ${old_src:+ssh-old }launcher ${old_src:+launcher-old }rsync tar}"
run_case ssh >/dev/null 2>&1 || true  # warm-up: the payload in the page cache
# Rounds, each case once per round: a drift of this shared machine (other tenants, the page
# cache) touches every case alike, not the ones that happened to run last.
declare -A lines=()
for _ in $(seq "$RUNS"); do
  for c in "${cases[@]}"; do
    wipe; sync
    mapfile -t before < <(usage)
    s=$(date +%s.%N)
    run_case "$c" >"$D/out/$c.log" 2>&1 || { cp "$D/out/$c.log" "/tmp/yeet-cpu-failed-$c.log"; echo "  ($c failed: $(tail -3 "$D/out/$c.log" | tr '\n' ' '))"; continue; }
    e=$(date +%s.%N)
    mapfile -t after < <(usage)
    wall=$(echo "$e - $s" | bc)
    case $c in launcher*) wall=$(awk '/^yeet wall /{print $3}' "$D/out/$c.out") ;; esac
    lines[$c]+="$(python3 - "$c" "$wall" "${before[*]}" "${after[*]}" <<'PY'
import sys
case, wall = sys.argv[1], float(sys.argv[2])
used = [(int(a) - int(b)) / 1e9 for b, a in zip(sys.argv[3].split(), sys.argv[4].split())]
head, nodes = used[0], used[1:]
if case == "tar":  # one node did it all
    head, nodes = 0.0, [used[1]]
print(f"{wall:.3f} {head:.3f} {sum(nodes) / len(nodes):.3f} {max(nodes):.3f}")
PY
)"$'\n'
  done
done
# Per case: the run whose receiving nodes spent the least CPU, and the median node mean; then
# the ratios the issue names, of medians.
for c in "${cases[@]}"; do printf '%s\n' "$c" "${lines[$c]:-}" > "$D/out/lines-$c"; done
python3 - "$RUNS" "$N" "$D/out" "${cases[@]}" <<'PY'
import statistics, sys
runs, n, out, cases = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
label = {"ssh": "ezpz yeet --transport ssh", "ssh-old": "  the same, OLD ezpz",
         "launcher": "ezpz yeet --transport launcher (srun)", "launcher-old": "  the same, OLD ezpz",
         "rsync": "rsync greedy (rsync_greedy.py)", "tar": "one node: zstd -d | tar -x"}
print(f"{'-- ' + n + ' nodes, ' + runs + ' rounds (CPU s)':<40} {'wall':>7} {'head':>8} {'node mean':>10} "
      f"{'node max':>9} {'median mean':>12}")
median = {}
for c in cases:
    rows = [list(map(float, l.split())) for l in open(f"{out}/lines-{c}").read().split("\n")[1:] if l.strip()]
    if not rows:
        print(f"  {label[c]:<38} (no run succeeded)")
        continue
    best = min(rows, key=lambda r: r[2])
    median[c] = statistics.median(r[2] for r in rows)
    print(f"  {label[c]:<38} {best[0]:6.2f}s {best[1]:7.2f}s {best[2]:9.2f}s {best[3]:8.2f}s {median[c]:11.2f}s"
          f"   rounds: {' '.join(f'{r[2]:.2f}' for r in rows)}")
for c in ("ssh", "launcher"):
    for floor, goal in (("rsync", 0.7), ("tar", 1.3)):
        if c in median and floor in median:
            print(f"  {c} / {floor} node CPU (medians): {median[c] / median[floor]:.2f}x (goal <= {goal}x)")
PY

[ "${PROFILE:-0}" = 1 ] || exit 0
set +o pipefail  # `perf report | head` ends perf with SIGPIPE: not a failure of the bench
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
for c in ssh launcher; do
  wipe; sync
  perf record -q -a ${PROFILE_GRAPH:+--call-graph dwarf,8192} -F "${PROFILE_HZ:-2000}" -o "$D/out/perf-$c.data" >/dev/null 2>&1 &
  perf_pid=$!
  sleep 1  # perf is recording before the case starts
  run_case "$c" >"$D/out/$c.log" 2>&1 || true
  kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
  echo "-- $c: where the CPU went (perf, every CPU, whole run)"
  perf report -q -i "$D/out/perf-$c.data" --sort comm --stdio 2>/dev/null | grep -v '^$' | head -8 | sed 's/^/  /'
  if [ "$c" = ssh ]; then
    echo "   sshd (the ssh transport's receiving end on every node), by symbol:"
    perf report -q -i "$D/out/perf-$c.data" --comm sshd --sort dso,sym --stdio 2>/dev/null | grep -v '^$' | head -10 |
      sed 's/^/  /'
  fi
  echo "   ezpz's own processes, by symbol:"
  perf report -q -i "$D/out/perf-$c.data" --comm ezpz --sort dso,sym --stdio 2>/dev/null | grep -v '^$' | head -25 |
    sed 's/^/  /'
done

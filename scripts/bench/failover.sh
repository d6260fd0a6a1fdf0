#!/usr/bin/env bash
# Failover's reaction time on 5 simulated nodes (scripts/cluster-sim; real Slurm and MPICH):
# seconds from a node's death (every process of the job on node3 SIGKILLed at step 3 of a gloo
# all_reduce loop) to the next attempt's first rank line, beside the anchor: the job's own
# start-up (a fresh launch on 4 healthy nodes, from its start to its first rank line). The
# difference is what failover adds: the verdict, the probe, the backoff (goal: under 15 s, with
# the default --kill-after). Then the in-place retry of a storage error (rank 1's ENOSPC at its
# start, tests/data/fail_signs.py): its failure line to attempt 2's first rank line, beside the
# same start-up (goal: under 5 s over it).
# Usage: scripts/bench/failover.sh [path/to/ezpz]   (default build/release/ezpz). Knobs: RUNS=3
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
ezpz_src=$(readlink -f "${1:-build/release/ezpz}")
runs=${RUNS:-3}
sim="$src/scripts/cluster-sim"
export EZSIM_DIR=/var/tmp/ezpz-bench-failover EZSIM_PREFIX=ezbfo EZSIM_NET=10.250.33
D=$EZSIM_DIR
X="$sim/exec.sh"
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" 5 >/dev/null
"$sim/slurm-up.sh" >/dev/null
export SLURM_CONF="$D/slurm/slurm.conf"
mkdir -p "$D/bin" "$D/mpich/bin" "$D/home"
cp "$ezpz_src" "$D/bin/ezpz"
cp "$src/tests/data/gloo_loop.py" "$src/tests/data/fail_signs.py" "$D/"
ln -sf /usr/bin/mpiexec.mpich "$D/mpich/bin/mpiexec"
ln -sf /usr/bin/hydra_pmi_proxy "$D/mpich/bin/hydra_pmi_proxy"
printf 'node%s\n' 1 2 3 4 5 >"$D/hostfile"
common=(env EZPZ_MACHINE=local EZPZ_HOME="$D/home" HOME="$D/home" PYTHONUNBUFFERED=1 STEPS=15)
srun=(salloc -N 5 --ntasks-per-node=1 "$D/bin/ezpz" launch -n 4 --ppn 1)
mpich=(env PATH="$D/mpich/bin:$PATH" "$D/bin/ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" -n 4 --ppn 1)
ns3=$(readlink "/proc/$(cat "$D/nodes/node3/launcher.pid")/ns/net")

# $D/timed.py NS KILL CMD...: run CMD, timestamping its lines; with KILL=1, kill node3's processes
# (those in network namespace NS) when attempt 0 reaches step 3. Prints startup_s (start -> first
# rank line) or reaction_s (kill -> attempt 1's first rank line).
cat >"$D/timed.py" <<'PY'
import os, re, signal, subprocess, sys, time
ns3, kill, cmd = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
killed_at, first, attempt = None, None, 0
def kill_node3():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            if ("__rank-env" in cmdline or "gloo_loop.py" in cmdline) and os.readlink(f"/proc/{pid}/ns/net") == ns3:
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
for line in p.stdout:
    now = time.monotonic()
    m = re.match(r"start rank \d+ host \S+ restart (\d+)", line)
    if m and first is None and (not kill or int(m.group(1)) == 1):
        first = now
    if kill and killed_at is None and line.startswith("step 3 rank"):
        kill_node3()
        killed_at = time.monotonic()
p.wait()
if first is None:
    sys.exit(f"no first rank line (exit {p.returncode})")
print(f"{(first - killed_at) if kill else (first - t0):.2f}")
PY
timed() { "$X" "${common[@]}" python3 "$D/timed.py" "$ns3" "$@" 2>/dev/null | tail -1; }

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.2f}")' "$@"; }

echo "== failover reaction: kill -> next attempt's first rank line, vs the job's own start-up (median of $runs)"
printf '  %-34s %12s %12s %12s\n' launcher "startup (s)" "reaction (s)" "added (s)"
for name in srun mpich; do
  declare -n cmd=$name
  s=() r=()
  for ((i = 0; i < runs; i++)); do
    s+=("$(timed 0 "${cmd[@]}" -- /usr/bin/python3 "$D/gloo_loop.py")")
    r+=("$(timed 1 "${cmd[@]}" --spare-nodes 1 -- /usr/bin/python3 "$D/gloo_loop.py")")
  done
  ms=$(median "${s[@]}"); mr=$(median "${r[@]}")
  printf '  %-34s %12s %12s %12s\n' "$name (${cmd[0]})" "$ms" "$mr" "$(python3 -c "print(f'{$mr - $ms:.2f}')")"
  echo "    runs: startup ${s[*]}; reaction ${r[*]}"
done

# The storage error's in-place retry: rank 1's "[Errno 28]" line -> attempt 2's first rank line.
cat >"$D/timed_storage.py" <<'PY'
import re, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
failed, first, up = None, None, None
for line in p.stdout:
    now = time.monotonic()
    up = up or (now if re.match(r"start rank \d+ attempt 1", line) else None)
    failed = failed or (now if "[Errno 28]" in line else None)
    first = first or (now if re.match(r"start rank \d+ attempt 2", line) else None)
p.wait()
if failed is None or first is None or p.returncode != 0:
    sys.exit(f"no retry (exit {p.returncode})")
print(f"{up - t0:.2f} {first - failed:.2f}")
PY
echo "== storage error retried in place: its line -> attempt 2's first rank line, vs the start-up (median of $runs)"
s=() r=()
for ((i = 0; i < runs; i++)); do
  rm -f "$D"/storage-$i.*
  read -r a b < <("$X" "${common[@]}" FAIL_MODE=storage COUNTER="$D/storage-$i" python3 "$D/timed_storage.py" \
    "${srun[@]}" --spare-nodes 1 -- /usr/bin/python3 "$D/fail_signs.py" 2>/dev/null | tail -1)
  s+=("$a"); r+=("$b")
done
ms=$(median "${s[@]}"); mr=$(median "${r[@]}")
printf '  %-34s %12s %12s %12s\n' "srun, ENOSPC on rank 1" "$ms" "$mr" "$(python3 -c "print(f'{$mr - $ms:.2f}')")"
echo "    runs: startup ${s[*]}; retry ${r[*]}"

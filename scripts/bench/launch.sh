#!/usr/bin/env bash
# Launch overhead: ezpz launch through mpirun vs mpirun itself, the built-in local launcher,
# and torchrun (Debian's python3-torch) starting the same number of processes.
# Usage: scripts/bench/launch.sh [path/to/ezpz [path/to/anchor-ezpz]]   (default: build/release/ezpz)
# RUNS, PAIRS (the interleaved runs) and PERF_RUNS say how many runs; PERF=0 skips the per-process part.
# RECORDS=N: the launches find N old job records in $EZPZ_HOME, each in a job folder of its own (a
# user's home after N batch jobs); EZPZ_KEEP_RECORDS is then N+1000, so none is pruned meanwhile.
# The interleaved runs take ezpz's overhead apart, beside mpirun with the cheapest shim there can
# be (a floor for any design that keeps a process beside each rank). With perf installed it also
# prints the CPU one process costs on this machine (perf stat): the floor any exec pays (an empty
# static C program), ezpz's own start, and the per-rank shim (ezpz's and the floor's), which is
# where ezpz's overhead over the launcher it wraps comes from; with each its page faults and what
# one fault costs here, and (with valgrind) the instructions each runs: on a virtual machine where
# a fault is dear, a start's cost is its faults, not its instructions. With gdb, the cpuid
# instructions each runs before and after main: each one traps to the hypervisor of a virtual machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=$(readlink -f "${1:-build/release/ezpz}")
command -v hyperfine >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
runs=${RUNS:-40}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export EZPZ_HOME="$tmp/home"
anchor=${2:+$(readlink -f "$2")}
if [ "${RECORDS:-0}" -gt 0 ]; then
  for ((i = 0; i < RECORDS; i++)); do
    d="$EZPZ_HOME/jobs/$((100000 + i)).pbs"
    mkdir -p "$d/launch-20261130T000000-$i" && echo '{}' > "$d/launch-20261130T000000-$i.json"
  done
  export EZPZ_KEEP_RECORDS=$((RECORDS + 1000))
fi
# Slurm brings munge: with munged not running, PMIx's munge plugin retries for ~2 s in every mpirun
# (bare or under ezpz alike), which would hide the difference this bench is for.
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
: > "$tmp/empty.py"
root_flags=""; [ "$(id -u)" = 0 ] && root_flags="--allow-run-as-root"
cmds=("mpirun -np 4 $root_flags --oversubscribe true"
      "$ezpz launch --launcher mpirun -n 4 -- true"
      "$ezpz launch --launcher mpirun --no-rank-env -n 4 -- true"
      "$ezpz launch --launcher local -n 4 -- true")
hyperfine -N --warmup 3 --runs "$runs" --export-json "$tmp/r.json" "${cmds[@]}" >/dev/null 2>&1
echo '{"results": []}' > "$tmp/t.json"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then  # seconds per run: a few runs are enough
  hyperfine -N --warmup 1 --runs 5 --export-json "$tmp/t.json" \
    "/usr/bin/python3 scripts/bench/torchrun.py --standalone --nproc_per_node=4 $tmp/empty.py" >/dev/null 2>&1
fi
python3 - "$tmp/r.json" "$tmp/t.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"] + json.load(open(sys.argv[2]))["results"]
print(f"{'command':<80} {'median':>10} {'mean':>10}")
for r in res:
    cmd = r["command"].replace("/usr/bin/python3 scripts/bench/torchrun.py", "torchrun")
    print(f"{cmd[:80]:<80} {r['median']*1e3:>8.1f}ms {r['mean']*1e3:>8.1f}ms")
PY
echo "launch overhead, interleaved runs (ratio to mpirun directly; the last ones as typed, each binary"
echo "choosing its launcher: since #26 part 7 a laptop's is the built-in one):"
# ezpz's own part alone (no shims, no record), then the record, then the shims; and the floor
# of any shim that stays to supervise its rank: a static C program that only makes two pipes,
# vforks and execs the rank, passes its bytes on until both pipes close, and exits as it did
# (then the same under the cheapest head: what the whole design costs before it does anything).
floor=()
if command -v cc >/dev/null; then
  cat > "$tmp/floor.c" <<'C'
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int o[2], e[2];
  if (argc < 2 || pipe(o) || pipe(e)) return 127;
  pid_t pid = vfork();
  if (pid == 0) {
    dup2(o[1], 1); dup2(e[1], 2); close(o[0]); close(e[0]); close(o[1]); close(e[1]);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  close(o[1]); close(e[1]);
  struct pollfd p[2] = {{o[0], POLLIN, 0}, {e[0], POLLIN, 0}};
  char buf[65536];
  for (int open = 2; open > 0;) {
    if (poll(p, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || !p[i].revents) continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n <= 0) { close(p[i].fd); p[i].fd = -1; --open; } else if (write(i + 1, buf, (size_t)n) < 0) return 1;
    }
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
C
  # With the cheapest head too (a static C program that vforks the launcher and waits): the floor
  # of any design with a process that supervises the launcher and one beside each rank.
  cat > "$tmp/floor-head.c" <<'C'
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc < 2) return 127;
  pid_t pid = vfork();
  if (pid == 0) { execvp(argv[1], argv + 1); _exit(127); }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
C
  cc -O2 -static -o "$tmp/floor-shim" "$tmp/floor.c" && cc -O2 -static -o "$tmp/floor-head" "$tmp/floor-head.c" &&
    floor=("mpirun -np 4 $root_flags --oversubscribe ./floor-shim true"
           "./floor-head mpirun -np 4 $root_flags --oversubscribe ./floor-shim true")
fi
bench=$PWD/scripts/bench
(cd "$tmp" && python3 "$bench/interleaved.py" "${PAIRS:-100}" "${cmds[0]}" "${floor[@]}" \
  "$ezpz launch --launcher mpirun --no-rank-env --no-record -n 4 -- true" "${cmds[2]}" "${cmds[1]}" \
  ${anchor:+"$anchor launch --launcher mpirun -n 4 -- true"} \
  "$ezpz launch -n 4 -- true" ${anchor:+"$anchor launch -n 4 -- true"})
if [ "${PERF:-1}" != 0 ] && command -v perf >/dev/null && command -v cc >/dev/null; then  # PERF=0: none
  printf 'int main(void) { return 0; }\n' > "$tmp/empty.c"
  cc -O2 -static -o "$tmp/empty" "$tmp/empty.c"
  # What one page fault costs here: a static program writing to 0 and then 400 pages of its bss.
  printf '#include <stdlib.h>\nstatic volatile char b[400 * 4096];\nint main(int c, char** v) { for (int i = 0; i < (c > 1 ? atoi(v[1]) : 0); ++i) b[i * 4096] = 1; return 0; }\n' > "$tmp/touch.c"
  cc -O2 -static -o "$tmp/touch" "$tmp/touch.c"
  label_of() {  # a command as the tables show it
    local l=${1//$tmp\/empty/an empty static C program}
    l=${l//$tmp\/floor-shim/floor-shim}
    l=${l//$tmp\/touch/touch (pages written)}
    l=${l//$ezpz/ezpz}
    echo "${l:0:92}"
  }
  echo "CPU and page faults per process (perf stat -r ${PERF_RUNS:-200}, task-clock, page-faults with its child's):"
  for cmd in "$tmp/empty" "/usr/bin/true" "$ezpz --version" "$tmp/floor-shim /usr/bin/true" \
             "$ezpz __rank-env --np=1 --ppn=1 --nhosts=1 --master-addr=localhost --master-port=1 --run-id=bench --restart=0/0 -- /usr/bin/true" \
             "$tmp/touch 0" "$tmp/touch 400"; do
    read -r ms faults < <(perf stat -x, -e task-clock,page-faults -r "${PERF_RUNS:-200}" $cmd 2>&1 >/dev/null |
                           awk -F, '/task-clock/ {t=$1} /page-faults/ {f=$1} END {print t, f}')
    printf '  %-92s %6.2f ms %5d faults\n' "$(label_of "$cmd")" "$ms" "$faults"
    [ "$cmd" = "$tmp/touch 0" ] && touch0=$ms
    [ "$cmd" = "$tmp/touch 400" ] && awk -v a="$touch0" -v b="$ms" 'BEGIN {printf "  one page fault here: %.1f us of CPU ((touch 400 - touch 0) / 400)\n", (b - a) * 1000 / 400}'
  done
  if command -v valgrind >/dev/null; then  # instructions, which page faults do not count
    echo "instructions per process (valgrind --tool=callgrind, the process alone):"
    for cmd in "$tmp/empty" "$ezpz --version" "$tmp/floor-shim /usr/bin/true" \
               "$ezpz __rank-env --np=1 --ppn=1 --nhosts=1 --master-addr=localhost --master-port=1 --run-id=bench --restart=0/0 -- /usr/bin/true"; do
      n=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" $cmd 2>&1 >/dev/null | awk '/Collected/ {print $NF}')
      printf '  %-92s %9d\n' "$(label_of "$cmd")" "$n"
    done
  fi
  if command -v gdb >/dev/null && command -v objdump >/dev/null; then
    # On a virtual machine cpuid traps to the hypervisor: what every process start pays here
    # before main (glibc's CPU and cache probe; in ezpz also libcrypto's, nettle's and liblzma's).
    count_cpuid() {  # a breakpoint at every cpuid of the static binary $1; the hits of one run
      objdump -d --no-show-raw-insn "$1" | awk '/\tcpuid/ {sub(":", "", $1); print "break *0x" $1; print "commands"; print "silent"; print "continue"; print "end"}' > "$tmp/gdb.cmds"
      printf 'set pagination off\nset confirm off\nrun %s\ninfo breakpoints\n' "${*:2}" >> "$tmp/gdb.cmds"
      gdb -q -batch -x "$tmp/gdb.cmds" "$1" 2>/dev/null | awk '/breakpoint already hit/ {n += $4} END {print n + 0}'
    }
    printf '#include <cpuid.h>\n#include <stdio.h>\n#include <time.h>\nint main(void) { unsigned a, b, c, d; struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);\n for (int i = 0; i < 1000; ++i) __cpuid_count(4, i & 3, a, b, c, d);\n clock_gettime(CLOCK_MONOTONIC, &t1); printf("%%.2f", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6); return 0; }\n' > "$tmp/cpuid.c"
    cc -O2 -o "$tmp/cpuid" "$tmp/cpuid.c"
    echo "cpuid instructions per process (gdb, a breakpoint at each; one cpuid here: $("$tmp/cpuid") us):"
    for cmd in "$tmp/empty" "$tmp/floor-shim /usr/bin/true" "$ezpz --version" \
               "$ezpz __rank-env --np=1 --ppn=1 --nhosts=1 --master-addr=localhost --master-port=1 --run-id=bench --restart=0/0 -- /usr/bin/true"; do
      # shellcheck disable=SC2086
      printf '  %-92s %9d\n' "$(label_of "$cmd")" "$(count_cpuid $cmd)"
    done
  fi
fi

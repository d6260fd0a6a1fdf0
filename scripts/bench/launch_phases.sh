#!/usr/bin/env bash
# Where a launch's time goes, from the kernel's own record of every process start, fork and end
# (perf's sched tracepoints, system-wide): for bare mpirun, the cheapest design (a static C head
# over static C shims) and ezpz (and an anchor build when given), each RUNS times, the medians of
#   pre        the head's start to the launcher's exec (the plan; bare: the shell's fork alone)
#   start      the launcher's exec to its first rank process
#   ranks      the first rank process to the last one's end
#   end        that to the launcher's end
#   post       the launcher's end to the head's (the summary, the record)
# and, for each rank's shim, its exec to the fork of its command and the command's end to its own.
# Usage: scripts/bench/launch_phases.sh [path/to/ezpz [path/to/anchor-ezpz]]   (needs perf, cc, root)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=$(readlink -f "${1:-build/release/ezpz}")
anchor=${2:+$(readlink -f "$2")}
runs=${RUNS:-30}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export EZPZ_HOME="$tmp/home" PMIX_MCA_psec=${PMIX_MCA_psec:-native}
root_flags=""; [ "$(id -u)" = 0 ] && root_flags="--allow-run-as-root"
printf '#include <poll.h>\n#include <sys/wait.h>\n#include <unistd.h>\nint main(int c, char** v) { int o[2], e[2]; if (c < 2 || pipe(o) || pipe(e)) return 127; pid_t p = vfork(); if (!p) { dup2(o[1], 1); dup2(e[1], 2); close(o[0]); close(e[0]); close(o[1]); close(e[1]); execvp(v[1], v + 1); _exit(127); } close(o[1]); close(e[1]); struct pollfd f[2] = {{o[0], POLLIN, 0}, {e[0], POLLIN, 0}}; char b[65536]; for (int n = 2; n > 0;) { if (poll(f, 2, -1) < 0) continue; for (int i = 0; i < 2; ++i) { if (f[i].fd < 0 || !f[i].revents) continue; ssize_t r = read(f[i].fd, b, sizeof b); if (r <= 0) { close(f[i].fd); f[i].fd = -1; --n; } else if (write(i + 1, b, (size_t)r) < 0) return 1; } } int s; waitpid(p, &s, 0); return WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s); }\n' > "$tmp/floor-shim.c"
printf '#include <sys/wait.h>\n#include <unistd.h>\nint main(int c, char** v) { if (c < 2) return 127; pid_t p = vfork(); if (!p) { execvp(v[1], v + 1); _exit(127); } int s; waitpid(p, &s, 0); return WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s); }\n' > "$tmp/floor-head.c"
cc -O2 -static -o "$tmp/floor-shim" "$tmp/floor-shim.c" && cc -O2 -static -o "$tmp/floor-head" "$tmp/floor-head.c"
phases() {  # label shim-name command...
  local label=$1 shim=$2; shift 2
  perf record -q -o "$tmp/p.data" -e sched:sched_process_exec -e sched:sched_process_exit \
    -e sched:sched_process_fork -a -- bash -c "for i in \$(seq $runs); do $* >/dev/null 2>&1; done" >/dev/null 2>&1
  perf script -i "$tmp/p.data" -F comm,pid,time,event,trace 2>/dev/null > "$tmp/p.txt"
  python3 - "$label" "$shim" "$tmp/p.txt" <<'PY'
import re, statistics, sys
label, shim, path = sys.argv[1:]
ev = []
for line in open(path):
    m = re.match(r'\s*(.+?)\s+(\d+)\s+([\d.]+):\s+sched:(\w+):\s*(.*)', line)
    if m:
        ev.append((int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)))
parent, execs, exits, tops, loop = {}, {}, {}, [], None
for pid, t, e, tr in ev:
    if e == 'sched_process_fork':
        child = int(re.search(r'child_pid=(\d+)', tr).group(1))
        parent[child] = (pid, t)
        loop = pid if loop is None else loop
        if pid == loop:
            tops.append(child)
    elif e == 'sched_process_exec':
        execs.setdefault(int(re.search(r'\bpid=(\d+)', tr).group(1)), (t, re.search(r'filename=(\S+)', tr).group(1)))
    elif 'group_dead=true' in tr:
        exits[int(re.search(r'\bpid=(\d+)', tr).group(1))] = t
def root(p):
    while p in parent and p not in tops:
        p = parent[p][0]
    return p
ph = {k: [] for k in ('pre', 'start', 'ranks', 'end', 'post')}
sh = {'shim exec->cmd fork': [], 'cmd end->shim end': []}
for top in tops[1:]:  # the first is seq
    procs = [p for p in execs if root(p) == top]
    mp = [p for p in procs if execs[p][1].endswith('/mpirun')]
    if not mp or top not in execs or top not in exits or mp[0] not in exits:
        continue
    m = mp[0]
    ranks = [p for p in procs if p != m and p != top and execs[p][0] > execs[m][0] and
             (execs[p][1].endswith('/true') or shim in execs[p][1])]
    if not ranks:
        continue
    first = min(execs[p][0] for p in ranks)
    last = max(exits.get(p, first) for p in ranks)
    for k, v in (('pre', execs[m][0] - execs[top][0]), ('start', first - execs[m][0]), ('ranks', last - first),
                 ('end', exits[m] - last), ('post', exits[top] - exits[m])):
        ph[k].append(v)
    for s in (p for p in ranks if shim in execs[p][1]):
        kids = sorted((parent[c][1], c) for c in parent if parent[c][0] == s)
        if kids and s in exits:
            sh['shim exec->cmd fork'].append(kids[0][0] - execs[s][0])
            if kids[0][1] in exits:
                sh['cmd end->shim end'].append(exits[s] - exits[kids[0][1]])
cells = [f"{k} {statistics.median(v) * 1e3:6.2f}" for k, v in {**ph, **sh}.items() if v]
print(f"  {label:<28} n={len(ph['pre']):<3} " + '  '.join(cells) + ' ms')
PY
}
echo "launch phases, -n 4 -- true under mpirun, medians of $runs runs (perf sched tracepoints):"
phases "mpirun" "-" "mpirun -np 4 $root_flags --oversubscribe true"
phases "floor head + floor shims" "floor-shim" \
  "$tmp/floor-head mpirun -np 4 $root_flags --oversubscribe $tmp/floor-shim true"
phases "ezpz --no-rank-env" "-" "$ezpz launch --launcher mpirun --no-rank-env -n 4 -- true"
phases "ezpz" "$ezpz" "$ezpz launch --launcher mpirun -n 4 -- true"
[ -n "$anchor" ] && phases "anchor" "$anchor" "$anchor launch --launcher mpirun -n 4 -- true"
true

#!/usr/bin/env bash
# Rank output through ezpz launch: every rank of an MPI launch runs the shim (ezpz __rank-env),
# which sends its command's stdout/stderr over the rank hub's TCP connection to the launching
# ezpz, which writes whole lines (and copies each rank's into rank-R.HOST.out/.err files).
#  1. throughput: 2 ranks each printing LINES lines of ~190 bytes (PYTHONUNBUFFERED=1, one print
#     a line) to a file, bare mpirun / mpiexec.mpich vs ezpz through each, and the built-in
#     launcher; RUNS interleaved runs, medians; lines cut or glued together, lines missing, and
#     whether each rank's files hold exactly its lines (goal: ezpz >= 0.9x the bare launcher)
#  2. the shim's cost per rank without a hub (hyperfine, no shell; OLD_EZPZ's shim beside it),
#     and with the hub: launch -n 1 with the shim vs --no-rank-env (no shim, no hub), interleaved
#  3. launch -n 4 -- true through mpirun vs mpirun itself (goal: 1.05x)
#  4. per-rank log files: launch -n FILE_RANKS (local) and -n MPI_FILE_RANKS (mpirun) of a rank
#     that writes one line to stdout and one to stderr, with records vs --no-record, interleaved
# Usage: scripts/bench/launch_output.sh [path/to/ezpz] [OLD_EZPZ]   (default: build/release/ezpz)
# Knobs: LINES=100000 RUNS=3 SHIM_RUNS=500 LAUNCH_RUNS=30 FILE_RUNS=15 FILE_RANKS=64 MPI_FILE_RANKS=16
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=$(readlink -f "${1:-build/release/ezpz}")
old=${2:+$(readlink -f "$2")}
command -v hyperfine >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
lines=${LINES:-100000}; runs=${RUNS:-3}
shim_runs=${SHIM_RUNS:-500}; launch_runs=${LAUNCH_RUNS:-30}; file_runs=${FILE_RUNS:-15}
file_ranks=${FILE_RANKS:-64}; mpi_file_ranks=${MPI_FILE_RANKS:-16}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export EZPZ_HOME="$tmp/home"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1   # OMP_NUM_THREADS: no warning from ezpz on every launch
unset EZPZ_RANK_HUB EZPZ_RANK_HUB_KEY
# Open MPI's PMIx tries munge first where its plugin is installed; with no munged running it
# retries for ~2.3 s per mpirun, which would swamp every number below (bare and ezpz alike).
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
py=/usr/bin/python3; [ -x "$py" ] || py=$(command -v python3)  # not a pyenv shim: no bash per rank
spew="$py $PWD/scripts/bench/spew.py @LINES@"
root_flags=""; [ "$(id -u)" = 0 ] && root_flags="--allow-run-as-root"
have_ompi=""; command -v mpirun >/dev/null && mpirun --version 2>&1 | grep -qi 'open mpi' && have_ompi=1
have_mpich=""; [ -x /usr/bin/mpiexec.mpich ] && [ -x /usr/bin/hydra_pmi_proxy ] && have_mpich=1
readelf -S "$ezpz" 2>/dev/null | grep -q debug_info &&
  echo "note: $ezpz has debug info (a Debug build?): its timings are not a release build's"
mkdir -p "$tmp/mpich"  # `--launcher mpiexec` runs the mpiexec on PATH: make that MPICH's
ln -s /usr/bin/mpiexec.mpich "$tmp/mpich/mpiexec"; ln -s /usr/bin/hydra_pmi_proxy "$tmp/mpich/hydra_pmi_proxy"

hf() {  # hyperfine, quiet unless it fails
  hyperfine "$@" >"$tmp/hyperfine.log" 2>&1 || { tail -20 "$tmp/hyperfine.log" >&2; exit 1; }
}
# hyperfine JSON -> table: median, mean, ratio and difference to the first command.
table() {  # table JSON NAME...
  python3 - "$@" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
names = sys.argv[2:] + [r["command"] for r in res[len(sys.argv) - 2:]]
base = res[0]["median"]
print(f"  {'':<50} {'median':>10} {'mean':>10} {'ratio':>7} {'- first':>11}")
for name, r in zip(names, res):
    d = "" if r is res[0] else f"{(r['median'] - base) * 1e3:+9.3f}ms"
    print(f"  {name[:50]:<50} {r['median']*1e3:>8.3f}ms {r['mean']*1e3:>8.3f}ms {r['median']/base:>7.3f} {d:>11}")
PY
}
# Commands run in turns (A B A B ...), so that drift in the machine's load hits each alike (the
# differences in 2 and 4 are small against it); medians in hyperfine's JSON for table.
interleave() {  # interleave JSON RUNS CMD...
  python3 - "$@" <<'PY'
import json, shlex, statistics, subprocess, sys, time
out, runs, cmds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = [[] for _ in cmds]
for k in range(3 + runs):  # 3 warm-up rounds
    for i, c in enumerate(cmds):
        t = time.perf_counter()
        if subprocess.run(shlex.split(c), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            sys.exit(f"failed: {c}")
        if k >= 3:
            times[i].append(time.perf_counter() - t)
json.dump({"results": [{"command": c, "median": statistics.median(t), "mean": statistics.fmean(t)}
                       for c, t in zip(cmds, times)]}, open(out, "w"))
PY
}

echo "== 1. output throughput: 2 ranks x $lines lines (~190 B), stdout to a file, median of $runs interleaved runs"
# name | command | index of the case it is compared with ('' = none)
cases=("no launcher (2 x python3, one file)|sh -c 'RANK=0 $spew & RANK=1 $spew; wait'|")
if [ -n "$have_ompi" ]; then
  o=${#cases[@]}
  cases+=("mpirun -np 2 (Open MPI)|mpirun -np 2 --oversubscribe $root_flags $spew|"
          "ezpz launch --launcher mpirun|$ezpz launch --launcher mpirun -n 2 -- $spew|$o"
          "ezpz launch --launcher mpirun --label|$ezpz launch --launcher mpirun -n 2 --label -- $spew|$o"
          "ezpz launch --launcher mpirun --no-record|$ezpz launch --launcher mpirun -n 2 --no-record -- $spew|$o")
fi
if [ -n "$have_mpich" ]; then
  m=${#cases[@]}
  cases+=("mpiexec.mpich -n 2 (MPICH)|/usr/bin/mpiexec.mpich -n 2 $spew|"
          "ezpz launch --launcher mpiexec (MPICH)|env PATH=$tmp/mpich:$PATH $ezpz launch --launcher mpiexec -n 2 -- $spew|$m")
fi
cases+=("ezpz launch --launcher local|$ezpz launch --launcher local -n 2 -- $spew|${o:-}")
python3 - "$lines" "$runs" "$tmp" "${cases[@]}" <<'PY'
import glob, os, re, shlex, shutil, statistics, subprocess, sys, time

lines, runs, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cases = [c.split("|") for c in sys.argv[4:]]
jobs = os.path.join(os.environ["EZPZ_HOME"], "jobs")
line_re = re.compile(rb"(?:\[(\S+) ([0-9]+)\] )?([01]) ([0-9]+) x{180}")
payload = sum(len(f"{r} {i} {'x' * 180}\n") for r in (0, 1) for i in range(lines))
out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")

def run(cmd, n):
    shutil.rmtree(jobs, ignore_errors=True)
    with open(out, "wb") as o, open(err, "wb") as e:
        t = time.perf_counter()
        rc = subprocess.run(shlex.split(cmd.replace("@LINES@", str(n))), stdout=o, stderr=e).returncode
        t = time.perf_counter() - t
    if rc:
        sys.exit(f"exit {rc}: {cmd}\n" + open(err, errors="replace").read()[-2000:])
    return t

def check_stdout():  # (cut or glued lines, whole lines seen once, bytes lost or added)
    bad, seen, dup, labels = 0, set(), 0, 0
    text = open(out, "rb").read()
    for ln in text.split(b"\n")[:-1]:
        m = line_re.fullmatch(ln)
        if not m or (m[2] is not None and m[2] != m[3]):
            bad += 1
            continue
        labels += m.start(3)
        key = (m[3], int(m[4]))
        dup += key in seen
        seen.add(key)
    return bad, len(seen) - dup, payload - (len(text) - labels)

def check_files():  # each rank's rank-R.HOST.out: exactly its lines, in order; .err empty
    dirs = [d for d in glob.glob(os.path.join(jobs, "*", "launch-*")) if os.path.isdir(d)]
    if len(dirs) != 1:
        return f"{len(dirs)} record dirs"
    problems = []
    for r in (0, 1):
        f = glob.glob(os.path.join(dirs[0], f"rank-{r}.*.out"))
        if len(f) != 1:
            problems.append(f"rank {r}: {len(f)} .out files")
            continue
        want = b"".join(f"{r} {i} {'x' * 180}\n".encode() for i in range(lines))
        got = open(f[0], "rb").read()
        if got != want:
            ok = sum(a == b for a, b in zip(got.split(b"\n"), want.split(b"\n")))
            problems.append(f"rank {r}: {len(got)} B, {ok}/{lines} lines right")
        for e in glob.glob(os.path.join(dirs[0], f"rank-{r}.*.err")):
            if os.path.getsize(e):
                problems.append(f"rank {r}: .err has {os.path.getsize(e)} B")
    return "; ".join(problems) or "ok"

for _, cmd, _ in cases:  # warm-up: page cache, MPI's first start
    run(cmd, 1000)
times = [[] for _ in cases]
bad = [[] for _ in cases]
whole = [[] for _ in cases]
lost = [[] for _ in cases]
files = [set() for _ in cases]
for _ in range(runs):
    for k, (name, cmd, _) in enumerate(cases):
        times[k].append(run(cmd, lines))
        b, w, l = check_stdout()
        bad[k].append(b)
        whole[k].append(w)
        lost[k].append(l)
        if "ezpz" in name and "--no-record" not in name:
            files[k].add(check_files())
shutil.rmtree(jobs, ignore_errors=True)
print(f"  {'':<42} {'median':>8} {'MB/s':>6} {'x base':>6} {'cut/glued':>15} {'whole lines':>11} {'bytes':>6}  rank files")
print(f"  {'':<42} {'':>8} {'':>6} {'':>6} {'median (max)':>15} {'(min)':>11} {'lost':>6}")
problems = []
for k, (name, cmd, base) in enumerate(cases):
    med = statistics.median(times[k])
    ratio = f"{statistics.median(times[int(base)]) / med:6.3f}" if base else ""
    cut = f"{statistics.median(bad[k]):g} ({max(bad[k])})"
    lb = max(lost[k], key=abs)
    fs = "; ".join(sorted(files[k])) or "-"
    print(f"  {name[:42]:<42} {med:7.3f}s {payload / med / 1e6:6.1f} {ratio:>6} {cut:>15} {min(whole[k]):>11} {lb:>6}  {fs}")
    if "ezpz" in name and (max(bad[k]) or min(whole[k]) != 2 * lines or lb or fs not in ("-", "ok")):
        problems.append(name)
print("  x base: throughput over the bare launcher's (local: over mpirun's), goal >= 0.9; MB/s of the"
      f" {payload / 1e6:.1f} MB of lines (labels not counted); whole lines of {2 * lines}")
for name in problems:
    print(f"  PROBLEM: {name}: lines cut, glued, lost or doubled, or rank files wrong")
PY

echo
echo "== 2. the shim's cost per rank (hyperfine -N, $shim_runs runs)"
base="--np=4 --ppn=4 --nhosts=1 --master-addr=127.0.0.1 --master-port=29500"
new_shim="$ezpz __rank-env $base --run-id=4242 --record-dir=$tmp/rec --restart=0/0"
cmds=("/bin/true"); names=("true alone")
[ -n "$old" ] && cmds+=("$old __rank-env $base -- /bin/true") && names+=("old shim, no hub")
cmds+=("$new_shim -- /bin/true" "$new_shim --label -- /bin/true")
names+=("shim, no hub" "shim --label, no hub")
# What a rank of `ezpz launch --launcher mpirun -n 4` sees (Open MPI's variables), and no hub.
OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=4 \
  hf -N --warmup 50 --runs "$shim_runs" --export-json "$tmp/shim.json" "${cmds[@]}"
table "$tmp/shim.json" "${names[@]}"
echo "  the same, interleaved ($shim_runs runs, each started from python: ~1 ms more for every command):"
OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=4 \
  interleave "$tmp/shim-i.json" "$shim_runs" "${cmds[@]}"
table "$tmp/shim-i.json" "${names[@]}"
if [ -n "$have_ompi" ]; then
  echo "  with the hub (shim + TCP connect + handshake + ezpz's end), one rank through mpirun ($launch_runs interleaved runs):"
  cmds=("$ezpz launch --launcher mpirun --no-rank-env -n 1 -- true" "$ezpz launch --launcher mpirun -n 1 -- true")
  names=("launch --no-rank-env -n 1 (no shim, no hub)" "launch -n 1 (shim + hub)")
  if [ -n "$old" ] && "$old" launch --launcher mpirun -n 1 -- true >/dev/null 2>&1; then
    cmds+=("$old launch --launcher mpirun -n 1 -- true"); names+=("old: launch -n 1")
  fi
  interleave "$tmp/hub.json" "$launch_runs" "${cmds[@]}"
  table "$tmp/hub.json" "${names[@]}"
  python3 - "$tmp/shim-i.json" "$tmp/hub.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["results"]
h = json.load(open(sys.argv[2]))["results"]
shim = s[-2]["median"] - s[0]["median"]
both = h[1]["median"] - h[0]["median"]
print(f"  shim without hub {shim * 1e3:.3f} ms; with hub {both * 1e3:.3f} ms over --no-rank-env,"
      f" so the hub (listen, connect, handshake, relay, record) ~{(both - shim) * 1e3:.3f} ms")
PY
  rm -rf "$EZPZ_HOME/jobs"

  echo
  echo "== 3. launch overhead: -n 4 -- true (hyperfine -N, $launch_runs runs; goal: ezpz <= 1.05x mpirun)"
  cmds=("mpirun -np 4 $root_flags --oversubscribe true"
        "$ezpz launch --launcher mpirun -n 4 -- true"
        "$ezpz launch --launcher mpirun --no-rank-env -n 4 -- true")
  hf -N --warmup 3 --runs "$launch_runs" --export-json "$tmp/launch.json" "${cmds[@]}"
  names=("mpirun -np 4 --oversubscribe true" "ezpz launch --launcher mpirun -n 4"
         "ezpz launch --launcher mpirun -n 4 --no-rank-env")
  table "$tmp/launch.json" "${names[@]}"
  echo "  the same, interleaved ($launch_runs runs):"
  interleave "$tmp/launch-i.json" "$launch_runs" "${cmds[@]}"
  table "$tmp/launch-i.json" "${names[@]}"
  rm -rf "$EZPZ_HOME/jobs"
fi

echo
echo "== 4. per-rank log files: each rank writes 'hi' to stdout and 'err' to stderr ($file_runs interleaved runs)"
rank_cmd="sh -c 'echo hi; echo err >&2'"
file_bench() {  # file_bench LAUNCHER N
  local j="$tmp/files-$1.json" d n
  interleave "$j" "$file_runs" \
    "$ezpz launch --launcher $1 -n $2 --no-record -- $rank_cmd" \
    "$ezpz launch --launcher $1 -n $2 -- $rank_cmd"
  d=$(ls -td "$EZPZ_HOME"/jobs/*/launch-*/ | head -1); n=$(ls "$d" | wc -l)
  table "$j" "--launcher $1 -n $2 --no-record" "--launcher $1 -n $2 ($((2 * $2)) files)"
  python3 - "$j" "$2" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
ranks, found = int(sys.argv[2]), int(sys.argv[3])
files, extra = 2 * ranks, r[1]["median"] - r[0]["median"]
alone = f"the files alone at {files / extra:.0f} files/s" if extra > 0 else "no measurable cost of the files"
print(f"  {files} files ({found} in the last record dir): {extra / files * 1e3:+.3f} ms per file,"
      f" {files / r[1]['median']:.0f} files/s and {7 * ranks / r[1]['median'] / 1e3:.1f} kB/s of lines in all; {alone}")
PY
  rm -rf "$EZPZ_HOME/jobs"
}
file_bench local "$file_ranks"
[ -n "$have_ompi" ] && file_bench mpirun "$mpi_file_ranks"
true

#!/usr/bin/env bash
# ezpz launch without --dry-run runs the real launcher: Open MPI's mpirun and MPICH's mpiexec.
set -u
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp"
unset PBS_JOBID PBS_NODEFILE SLURM_JOB_ID SLURM_JOBID HOSTFILE

# Open MPI (Debian's default mpirun): two ranks, output from both, exit code passes through.
out=$("$EZPZ_BIN" launch --launcher mpirun -n 2 -- sh -c 'echo rank=$OMPI_COMM_WORLD_RANK' 2>&1)
[ "$(grep -c '^rank=' <<<"$out")" -eq 2 ] || fail "mpirun: expected 2 rank lines, got: $out"
grep -qx 'rank=1' <<<"$out" || fail "mpirun: no rank 1 in: $out"
"$EZPZ_BIN" launch --launcher mpirun -n 2 -- sh -c 'exit 3' >/dev/null 2>&1
rc=$?; [ "$rc" -eq 3 ] || fail "mpirun: job exit 3 came back as $rc"

# Sophia (PBS + Open MPI): the line ezpz plans is one the real mpirun accepts (Open MPI 4.1
# rejects -n=2 and --hostfile=F): run the planned argv as it is, then through ezpz launch.
echo localhost > "$tmp/hosts"
sophia=(--machine sophia --hostfile "$tmp/hosts" -n 2 --ppn 2)
plan=$("$EZPZ_BIN" launch "${sophia[@]}" --dry-run --json -- sh -c 'echo sophia=$RANK/$WORLD_SIZE')
out=$(python3 - "$plan" <<'PY' 2>&1
import json, os, subprocess, sys
p = json.loads(sys.argv[1])
argv = p["argv"]
assert p["style"] == "sophia" and argv[:5] == ["mpirun", "-n", "2", "-N", "2"], argv
assert argv[argv.index("--hostfile") + 1].endswith("/hosts"), argv
launcher = argv[:argv.index("__rank-env") - 1]  # mpirun's own words, before ezpz's shim
assert not any("=" in a and a.startswith("-") for a in launcher), argv
env = dict(os.environ, **p["env"])
for name in p["unset_env"]:
    env.pop(name, None)
sys.exit(subprocess.run(argv, env=env, timeout=60).returncode)
PY
)
rc=$?; [ "$rc" -eq 0 ] || fail "sophia: the planned argv exited $rc: $out"
for r in 0 1; do grep -qx "sophia=$r/2" <<<"$out" || fail "sophia: no rank $r from the planned argv: $out"; done
out=$("$EZPZ_BIN" launch "${sophia[@]}" -- sh -c 'echo sophia=$RANK/$WORLD_SIZE' 2>&1)
rc=$?; [ "$rc" -eq 0 ] || fail "sophia: ezpz launch exited $rc: $out"
[ "$(grep -c '^sophia=[01]/2$' <<<"$out")" -eq 2 ] || fail "sophia: expected 2 rank lines from ezpz launch: $out"

# MPICH: an install directory on PATH whose mpiexec is Hydra.
mkdir -p "$tmp/mpich/bin"
ln -s /usr/bin/mpiexec.mpich "$tmp/mpich/bin/mpiexec"
ln -s /usr/bin/hydra_pmi_proxy "$tmp/mpich/bin/hydra_pmi_proxy"
export PATH="$tmp/mpich/bin:$PATH"
style=$("$EZPZ_BIN" launch --launcher mpiexec --dry-run --json -n 3 -- true | python3 -c 'import json,sys; print(json.load(sys.stdin)["style"])')
[ "$style" = mpich ] || fail "MPICH detected as '$style'"
out=$("$EZPZ_BIN" launch --launcher mpiexec -n 3 -- sh -c 'echo pmi=$PMI_RANK' 2>&1)
[ "$(grep -c '^pmi=' <<<"$out")" -eq 3 ] || fail "mpich: expected 3 rank lines, got: $out"
"$EZPZ_BIN" launch --launcher mpiexec -n 2 -- sh -c 'exit 4' >/dev/null 2>&1
rc=$?; [ "$rc" -eq 4 ] || fail "mpich: job exit 4 came back as $rc"

# A launcher that is not installed: 127 and a one-line reason.
err=$(PATH=/nonexistent "$EZPZ_BIN" launch --launcher srun -n 1 -- true 2>&1 >/dev/null)
rc=$?; [ "$rc" -eq 127 ] || fail "missing srun gave $rc, wanted 127"
grep -q 'srun: command not found' <<<"$err" || fail "missing srun message: $err"

[ "$fails" -eq 0 ] || exit 1
echo "launch exec: all checks passed"

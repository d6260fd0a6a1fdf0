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

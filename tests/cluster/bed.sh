# The simulated cluster's set-up every tests/cluster/test_*.sh shares (sourced). Before sourcing, a
# test exports EZSIM_DIR, EZSIM_PREFIX and EZSIM_NET (its own bed: tests never share one), and sets
# W to a work directory outside the bed when it wants one (made empty, removed at exit).
# After sourcing: src (the source tree), sim (scripts/cluster-sim), D (the bed), X (run in the
# login node's namespace), fails and fail(); bed_up starts the bed and sets ezpz; bed_done ends.
set -u
src=${EZPZ_SOURCE_DIR:?}
sim="$src/scripts/cluster-sim"
D=${EZSIM_DIR:?}
X="$sim/exec.sh"
W=${W:-}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Commands a test adds (bed_on_exit CMD) run at exit before the bed goes down; KEEP=1 keeps the bed
# up to look at after a failure.
bed_exit_hooks=()
bed_on_exit() { bed_exit_hooks+=("$1"); }
bed_exit() {
  local h
  for h in "${bed_exit_hooks[@]}"; do eval "$h"; done
  [ -n "${KEEP:-}" ] || "$sim/down.sh" >/dev/null 2>&1
  [ -z "$W" ] || rm -rf "$W"
}

# bed_up NODES [--slurm] [--gpus N] [--mpich]: a bed left by a killed run torn down, NODES nodes up,
# with Slurm (its nodes counting N GPUs each) and MPICH's mpiexec under $D/mpich/bin when asked;
# this ezpz copied to $D/bin/ezpz (outside /tmp, which is private per node). Fails the test loudly
# when namespaces or Slurm cannot start.
bed_up() {
  local nodes=$1 slurm= gpus= mpich=
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --slurm) slurm=1 ;;
      --gpus) gpus=$2; shift ;;
      --mpich) mpich=1 ;;
      *) echo "FAIL: bed_up: unknown option $1"; exit 1 ;;
    esac
    shift
  done
  "$sim/down.sh" >/dev/null 2>&1
  trap bed_exit EXIT
  "$sim/up.sh" "$nodes" || { echo "FAIL: the simulated cluster could not start (reason above)"; exit 1; }
  if [ -n "$slurm" ]; then
    EZSIM_GPUS=${gpus:-${EZSIM_GPUS:-0}} "$sim/slurm-up.sh" ||
      { echo "FAIL: Slurm could not start on the simulated cluster"; exit 1; }
    export SLURM_CONF="$D/slurm/slurm.conf"
  fi
  mkdir -p "$D/bin" "$D/home"
  if [ -n "$mpich" ]; then
    mkdir -p "$D/mpich/bin"
    ln -s /usr/bin/mpiexec.mpich "$D/mpich/bin/mpiexec"
    ln -s /usr/bin/hydra_pmi_proxy "$D/mpich/bin/hydra_pmi_proxy"
  fi
  if [ -n "$W" ]; then
    rm -rf "$W"
    mkdir -p "$W"
  fi
  cp "$EZPZ_BIN" "$D/bin/ezpz"
  ezpz="$D/bin/ezpz"
}

# bed_done WHAT: the verdict line; exit 1 when any check failed.
bed_done() {
  [ "$fails" -eq 0 ] || { echo "$fails $1 check(s) failed"; exit 1; }
  echo "$1: all checks passed"
}

#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install deps, build, ctest.
# Builds the dev preset (Debug, -Werror, _GLIBCXX_ASSERTIONS), the release preset (the fully
# static binary users get) and the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer,
# without the libtorch companion, which is not instrumented) and runs each test where it finds most (below).
# Nothing may go green by skipping: the dev build must find libtorch (EZPZ_REQUIRE_TORCH, else
# configure fails instead of dropping the torch tests), and any test that ctest reports as skipped
# or not run fails the run (scripts/ctest-strict.sh).
# Each test runs where it finds something the others cannot (chosen by label, never by name:
# `unit`, `e2e`, `cluster`, `torch`, `fuzz`, `style`, and `asan_only`, `release_only`, `valgrind`):
# - dev (Debug, -Werror, _GLIBCXX_ASSERTIONS, libtorch): torch and style tests,
#   e2e.relay_valgrind (valgrind needs a build without sanitizers), and clang-tidy and the include
#   cleaner on the sources the last EZPZ_TIDY_COMMITS (5) commits touched (scripts/check-tidy.sh,
#   check-includes.sh --recent: at most 30 sources, newest first). Its unit,
#   fuzz replay and other e2e tests are not built or run again (EZPZ_UNIT_TESTS=OFF): the asan preset is the same Debug
#   build with the same assertions, plus the sanitizers.
# - release (the fully static binary users get, built -O3 with -Werror): e2e and the cluster
#   tests (simulated nodes, real sshd and Slurm) that put that binary on the nodes under every
#   launcher and over ssh: cluster.launch, cluster.yeet, cluster.doctor, here only (`release_only`:
#   under asan they took 5 min of CI again; their code runs under asan in e2e and in the cluster
#   tests below, which reach the same nodes through the same launchers). yeet_incremental (deltas)
#   and yeet_launcher (yeet's agents under srun and mpiexec) and srun_stops (how a launch stops
#   under srun) add code paths, not new ways for that binary to reach or run on a node: they run
#   under asan only. Its unit tests (the same code as
#   asan's, with fakes) are not built (EZPZ_UNIT_TESTS=OFF).
# - asan: everything else under AddressSanitizer and UndefinedBehaviorSanitizer. The fault
#   injection tests (a disk filled, a segment altered, a relay stopped, a link dropped, a node that
#   fails a launch: cluster.yeet_faults, yeet_launcher_faults, yeet_stall, failover) run here only,
#   where a fault's error path is checked for memory errors too.
# This keeps CI under an hour as the suite grows.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in dev release asan; do
  echo "== $preset =="
  extra=()
  only=()
  if [ "$preset" = dev ]; then
    extra=(-DEZPZ_REQUIRE_TORCH=ON -DEZPZ_UNIT_TESTS=OFF)
    only=(-LE '^(cluster|e2e)$')
  elif [ "$preset" = release ]; then
    # -Werror is off in the preset users build: a newer compiler's new warning is theirs.
    extra=(-DEZPZ_WERROR=ON -DEZPZ_UNIT_TESTS=OFF)
    only=(-LE '^asan_only$')  # cluster_test(... ASAN_ONLY) in tests/CMakeLists.txt
  else
    only=(-LE '^release_only$')  # cluster_test(... RELEASE_ONLY)
  fi
  cmake --preset "$preset" "${extra[@]}"
  cmake --build --preset "$preset"
  scripts/ctest-strict.sh "$preset" "${only[@]}"
  if [ "$preset" = dev ]; then
    scripts/ctest-strict.sh dev -L '^valgrind$'
    # clang-tidy (.clang-tidy) and the include cleaner (iwyu: no unused project include) on the
    # sources the last commits touched: all of src/ takes ~10 and ~4 min.
    scripts/check-tidy.sh --recent "${EZPZ_TIDY_COMMITS:-5}"
    scripts/check-includes.sh --recent "${EZPZ_TIDY_COMMITS:-5}"
  fi
done

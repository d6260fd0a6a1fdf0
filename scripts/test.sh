#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install deps, build, ctest.
# Builds the dev preset (Debug, -Werror, _GLIBCXX_ASSERTIONS), the release preset (the fully
# static binary users get) and the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer,
# without the libtorch companion, which is not instrumented) and runs every test against each.
# Nothing may go green by skipping: the dev build must find libtorch (EZPZ_REQUIRE_TORCH, else
# configure fails instead of dropping the torch tests), and any test that ctest reports as skipped
# or not run fails the run (scripts/ctest-strict.sh).
# The cluster tests (tests/cluster: simulated nodes, real sshd and Slurm, the slow ones) run against
# the release binary (what users run) and under asan (memory errors under real load), not again
# against dev: dev compiles the same sources as release, and its own tests (torch, unit, e2e, fuzz
# replay, style) all run. The yeet fault-injection tests (a disk filled, a segment altered, a relay
# stopped, a link dropped: cluster.yeet_faults, yeet_launcher_faults, yeet_stall) run under asan
# only: the same code under the sanitizers, where a fault's error path is checked for memory errors
# too. This keeps CI under an hour as the suite grows.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in dev release asan; do
  echo "== $preset =="
  extra=()
  only=()
  if [ "$preset" = dev ]; then
    extra=(-DEZPZ_REQUIRE_TORCH=ON)
    only=(-E '^cluster[.]')
  elif [ "$preset" = release ]; then
    only=(-E '^cluster[.]yeet_(faults|launcher_faults|stall)$')
  fi
  cmake --preset "$preset" "${extra[@]}"
  cmake --build --preset "$preset"
  scripts/ctest-strict.sh "$preset" "${only[@]}"
done

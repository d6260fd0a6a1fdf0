#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install deps, build the static binary (only it:
# not the tests), show the launch plan, then run a real 4-process torch.distributed job (gloo
# all_reduce, env:// rendezvous) with ezpz's built-in local launcher. Each step says how long it
# took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step_at=$start
# step NAME: the time since the previous step, then NAME's banner.
step() {
  local now
  now=$(date +%s)
  [ "$now" = "$start" ] || echo "   ($((now - step_at)) s)"
  step_at=$now
  echo "== $1 =="
}
step "dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh
step "configure (release preset)"
cmake --preset release >/dev/null
step "build the ezpz binary"
cmake --build --preset release --target ezpz -j"$(nproc)"
ezpz=build/release/ezpz
job=(/usr/bin/python3 tests/data/gloo_allreduce.py)   # Debian's python3 has python3-torch
step "plan"
"$ezpz" launch --launcher local --dry-run -n 4 -- "${job[@]}"
"$ezpz" launch --launcher local --print-env -n 4 -- "${job[@]}"
step "run"
"$ezpz" launch --launcher local --label -n 4 -- "${job[@]}"
now=$(date +%s)
echo "   ($((now - step_at)) s)"
echo "demo: done in $((now - start)) s"

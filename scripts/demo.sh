#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install deps, build the static binary, show
# the launch plan, then run a real 4-process torch.distributed job (gloo all_reduce,
# env:// rendezvous) with ezpz's built-in local launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release
ezpz=build/release/ezpz
job=(/usr/bin/python3 tests/data/gloo_allreduce.py)   # Debian's python3 has python3-torch
echo "== plan =="
"$ezpz" launch --launcher local --dry-run -n 4 -- "${job[@]}"
"$ezpz" launch --launcher local --print-env -n 4 -- "${job[@]}"
echo "== run =="
"$ezpz" launch --launcher local --label -n 4 -- "${job[@]}"

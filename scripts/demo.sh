#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install deps, build the static binary,
# show the launch plan, then launch a small multi-process job on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release
ezpz=build/release/ezpz
job=(python3 -c 'import os, socket; r = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK"); print(f"hello from rank {r} on {socket.gethostname()}")')
echo "== plan =="
"$ezpz" launch --dry-run -n 4 -- "${job[@]}"
echo "== run =="
"$ezpz" launch -n 4 -- "${job[@]}"

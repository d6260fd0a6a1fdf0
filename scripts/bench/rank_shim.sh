#!/usr/bin/env bash
# Per-rank cost of the shim (ezpz __rank-env ... -- CMD) that every rank of an MPI launch runs:
# `true` alone, then `true` through each binary's shim, interleaved (hyperfine, no shell).
# The shim now runs the command as its child (to report a failed rank and label lines) where
# it used to exec it; run this with the old binary beside the new to see what that costs.
# Usage: scripts/bench/rank_shim.sh NEW_EZPZ [OLD_EZPZ]   (default NEW: build/release/ezpz)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=$(readlink -f "${1:-build/release/ezpz}")
old=${2:+$(readlink -f "$2")}
command -v hyperfine >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
runs=${RUNS:-1000}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# What a rank of `ezpz launch --launcher mpirun -n 4` sees (Open MPI's variables).
export OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=4
base="--np=4 --ppn=4 --nhosts=1 --master-addr=node1 --master-port=29500"
cmds=("/bin/true")
[ -n "$old" ] && cmds+=("$old __rank-env $base -- /bin/true")
cmds+=("$new __rank-env $base --run-id=4242 --record-dir=$tmp/rec --restart=0/0 -- /bin/true"
       "$new __rank-env $base --run-id=4242 --record-dir=$tmp/rec --restart=0/0 --label -- /bin/true")
hyperfine -N --warmup 50 --runs "$runs" --export-json "$tmp/r.json" "${cmds[@]}" >/dev/null 2>&1
python3 - "$tmp/r.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
alone = res[0]["median"]
names = ["true alone", "old shim (exec)"] if len(res) == 4 else ["true alone"]
names += ["new shim (child + report)", "new shim --label (lines relayed)"]
print(f"{'':<36} {'median':>9} {'mean':>9} {'shim cost (median - true)':>27}")
for name, r in zip(names, res):
    cost = "" if r is res[0] else f"{(r['median'] - alone) * 1e3:>8.3f} ms"
    print(f"{name:<36} {r['median']*1e3:>7.3f}ms {r['mean']*1e3:>7.3f}ms {cost:>27}")
PY

#!/usr/bin/env bash
# Start-up time of ezpz beside Python, median of many runs (hyperfine, no shell).
# Usage: scripts/bench/startup.sh [path/to/ezpz]   (default: build/release/ezpz)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=${1:-build/release/ezpz}
if ! command -v hyperfine >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
fi
runs=${RUNS:-300}
json=$(mktemp); trap 'rm -f "$json"' EXIT
cmds=("$ezpz --version" "$ezpz launch --dry-run -n 8 -- true"
      "$ezpz launch --dry-run --json -n 8 -- true" "python3 -c pass")
if python3 -c "import torch.distributed.run" 2>/dev/null; then
  cmds+=("python3 -c 'import torch.distributed.run'")
fi
hyperfine -N --warmup 20 --runs "$runs" --export-json "$json" "${cmds[@]}" >/dev/null 2>&1
python3 - "$json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
print(f"{'command':<55} {'median':>10} {'mean':>10} {'min':>10}")
for r in res:
    print(f"{r['command']:<55} {r['median']*1e3:>8.2f}ms {r['mean']*1e3:>8.2f}ms {r['min']*1e3:>8.2f}ms")
PY
echo "binary: $(stat -c %s "$ezpz") bytes ($(file -b "$ezpz" | cut -d, -f1-2))"

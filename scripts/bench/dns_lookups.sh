#!/usr/bin/env bash
# How long `ezpz launch --dry-run` and a real launch take where DNS never answers (a lost UDP
# answer: glibc waits its 5 s timeout), on Polaris' profile (MASTER_ADDR's high-speed-network
# name is looked up). Root: a network and mount namespace of its own (tests/e2e/dns_blackhole.py).
# Usage: scripts/bench/dns_lookups.sh [EZPZ] [OLD_EZPZ] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
new=${1:-$here/build/release/ezpz}
old=${2:-}
runs=${3:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'x3005c0s7b0n0\nx3005c0s7b1n0\n' > "$tmp/hosts"
for bin in "$new" ${old:+"$old"}; do
  argvs=$(python3 - "$bin" "$tmp/hosts" "$runs" <<'PY'
import json, sys
ezpz, hosts, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
dry = [ezpz, "launch", "--dry-run", "--machine", "polaris", "--hostfile", hosts, "--", "true"]
real = [ezpz, "launch", "--machine", "polaris", "--launcher", "local", "-n", "1", "--no-record", "--", "true"]
# The anchor: the same look-up unbounded, as ezpz made it before (getaddrinfo, glibc's wait).
import socket
name = socket.gethostname().split(".")[0] + ".hsn.cm.polaris.alcf.anl.gov"
anchor = ["getent", "ahosts", name]
print(json.dumps([dry] * runs + [real] * runs + [anchor] * runs))
PY
)
  EZPZ_HOME="$tmp/home" unshare -n -m python3 "$here/tests/e2e/dns_blackhole.py" "$argvs" | python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin]
n = len(rows) // 3
for what, part in (("launch --dry-run", rows[:n]), ("launch (real)  ", rows[n:2 * n]),
                   ("anchor: an unbounded look-up (getent ahosts)", rows[2 * n:])):
    secs = [r["seconds"] for r in part]
    asked = sum(r["queries"] for r in part)
    print(f"{sys.argv[1]}: {what}: median {statistics.median(secs):.3f} s, max {max(secs):.3f} s, "
          f"DNS queries {asked} in {len(part)} runs")
' "$bin"
done

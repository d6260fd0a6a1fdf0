#!/usr/bin/env bash
# What the node start script costs (the `sh -c SCRIPT ezpz EXE DIGEST SIZE SHIP ARGS` that every
# SSH start runs: yeet's relays, doctor --nodes, kill --all-nodes, failover probes), this binary's
# beside OLD_EZPZ's, interleaved: from the script's start to its exec of ezpz (ARGS: __self-digest,
# which only reads the binary). Two cases a node meets:
#   head path: the head's ezpz is at the same path on the node (a shared filesystem)
#   cache:     it is not; the copy shipped on an earlier run is in $TMPDIR/.ezpz-<uid>-<digest16>
# Since #53 the script checks the file and every directory above it (one stat, one readlink)
# before it asks the binary for its digest.
# Usage: scripts/bench/start_script.sh [path/to/ezpz] [OLD_EZPZ]   Knobs: RUNS=200
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=$(readlink -f "${1:-build/release/ezpz}")
old=${2:+$(readlink -f "$2")}
runs=${RUNS:-200}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" "$runs" "$ezpz" ${old:+"$old"} <<'EOF'
import hashlib, os, shlex, shutil, statistics, subprocess, sys, time
tmp, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def start_command(binary):
    """The start script `binary` sends a node (caught by a stand-in ssh that runs nothing)."""
    catch = os.path.join(tmp, "catch")
    with open(catch, "w") as f:
        f.write('#!/bin/sh\nprintf "%s" "$2" > "$CAUGHT"\nexit 255\n')
    os.chmod(catch, 0o755)
    hosts = os.path.join(tmp, "hosts")
    with open(hosts, "w") as f:
        f.write("node1\n")
    caught = os.path.join(tmp, "caught")
    env = dict(os.environ, CAUGHT=caught, EZPZ_MACHINE="local", HOME=tmp)
    subprocess.run([binary, "doctor", "--nodes", "--hostfile", hosts, "--ssh-command", catch, "--json"],
                   env=env, capture_output=True, timeout=120)
    with open(caught) as f:
        return shlex.split(f.read())

cases = {}
for binary in bins:
    words = start_command(binary)
    assert words[:2] == ["sh", "-c"] and words[3] == "ezpz", words[:4]
    digest = hashlib.sha256(open(binary, "rb").read()).hexdigest()
    node_tmp = os.path.join(tmp, "node-" + digest[:8])
    cache = os.path.join(node_tmp, f".ezpz-{os.getuid()}-{digest[:16]}")
    os.makedirs(cache, mode=0o700)
    shutil.copy(binary, os.path.join(cache, "ezpz"))
    base = words[:8]
    head = base[:4] + [binary] + base[5:] + ["__self-digest"]
    cached = base[:4] + ["/nonexistent/ezpz"] + base[5:] + ["__self-digest"]
    label = "this" if binary == bins[0] else "old "
    cases[f"{label} head path"] = (head, dict(os.environ, TMPDIR=node_tmp))
    cases[f"{label} cache    "] = (cached, dict(os.environ, TMPDIR=node_tmp))

times = {k: [] for k in cases}
for _ in range(runs):
    for name, (argv, env) in cases.items():
        t = time.perf_counter()
        out = subprocess.run(argv, env=env, capture_output=True, text=True)
        times[name].append(time.perf_counter() - t)
        assert out.returncode == 0 and len(out.stdout.strip()) == 64, (name, out.stderr)
print(f"start script to ezpz __self-digest, {runs} interleaved runs each (ms)")
print(f"{'case':24} {'median':>8} {'p10':>8} {'p90':>8}")
for name, ts in times.items():
    ts = sorted(t * 1000 for t in ts)
    print(f"{name:24} {statistics.median(ts):8.2f} {ts[len(ts) // 10]:8.2f} {ts[9 * len(ts) // 10]:8.2f}")
EOF

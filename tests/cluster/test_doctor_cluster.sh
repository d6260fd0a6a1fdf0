#!/usr/bin/env bash
# ezpz doctor --nodes / --launch on a simulated 8-node cluster: all reachable -> ok; one sshd
# stopped -> an error naming that host; --json has the documented fields; exit codes.
# Brings the test bed up and tears it down itself.
export EZSIM_DIR=/var/tmp/ezpz-ctest-doctor EZSIM_PREFIX=ezpzd EZSIM_NET=10.250.23
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 8
common=(env EZPZ_MACHINE=local HOME="$D/home" WANDB_MODE=offline TORCH_DEVICE=cpu)
doctor() { "$X" "${common[@]}" "$ezpz" doctor --hostfile "$D/hostfile" "$@"; }

# 1. Every node reachable: exit 0, each host answered, the summary checks are ok.
out=$(doctor --nodes --json --timeout 60)
rc=$?
[ "$rc" -eq 0 ] || fail "all reachable: exit $rc: $out"
python3 - "$out" <<'PY' || fail "all reachable --json: $out"
import json, sys
r = json.loads(sys.argv[1])["checks"]
for c in r:
    assert {"name", "status", "message", "remedy", "duration_ms"} <= set(c), c
    assert c["status"] in ("ok", "warning", "error"), c
hosts = {c["host"]: c for c in r if c.get("host")}
assert sorted(hosts) == [f"node{i}" for i in range(1, 9)], sorted(hosts)
assert all(c["name"] == "node" and c["status"] == "ok" for c in hosts.values()), hosts
named = {c["name"]: c for c in r if "host" not in c}
for k in ("nodes", "clock", "node-space", "ezpz-version"):
    assert named[k]["status"] == "ok", named[k]
assert "all 8 hosts answered" in named["nodes"]["message"], named["nodes"]
PY
# ... also through the system ssh client.
out=$(doctor --nodes --ssh-command ssh --timeout 60 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "--ssh-command ssh: exit $rc: $out"
grep -q '^\[ OK \] nodes: all 8 hosts answered' <<<"$out" || fail "--ssh-command ssh text: $out"

# 2. The launch probe: one rank per node through Open MPI's mpirun over ssh.
out=$(doctor --launch --launcher mpirun --json --timeout 60)
rc=$?
python3 - "$out" <<'PY' || fail "launch probe (exit $rc): $out"
import json, sys
launch = [c for c in json.loads(sys.argv[1])["checks"] if c["name"] == "launch"][0]
assert launch["status"] == "ok", launch
assert launch["message"].startswith("8 ranks, one per host, through mpirun"), launch
PY

# 3. A node whose ezpz is missing from the head's path gets a shipped copy, and a warning.
#    (the login node's /tmp is its own: the nodes do not have /tmp/ezpz-local; --timeout 60:
#    a sanitizer build is a 140 MB binary, 8 copies of which take ~15 s here)
out=$("$X" "${common[@]}" sh -c 'cp "$1" /tmp/ezpz-local && /tmp/ezpz-local doctor --hostfile "$2" --nodes --json --timeout 60' \
      _ "$ezpz" "$D/hostfile")
rc=$?
python3 - "$out" <<'PY' || fail "ezpz missing on the nodes (exit $rc): $out"
import json, sys
r = {c["name"]: c for c in json.loads(sys.argv[1])["checks"] if "host" not in c}
assert r["nodes"]["status"] == "ok", r["nodes"]
v = r["ezpz-version"]
assert v["status"] == "warning" and "/tmp/ezpz-local is missing on node1" in v["message"], v
PY
[ "$rc" -eq 0 ] || fail "ezpz missing on the nodes is only a warning: exit $rc"

# 3b. The same binary at that node-local path on every host: --nodes settles the local "not on a
#     shared filesystem" warning (it becomes ok, saying why).
"$X" cp "$ezpz" /tmp/ezpz-same || fail "copy to the login node's /tmp"
for n in $(cat "$D/hostfile"); do
  "$X" ssh -o BatchMode=yes "$n" cp "$ezpz" /tmp/ezpz-same || fail "copy to $n's /tmp"
done
out=$("$X" "${common[@]}" /tmp/ezpz-same doctor --hostfile "$D/hostfile" --nodes --json --timeout 60)
python3 - "$out" <<'PY' || fail "the same node-local binary everywhere: $out"
import json, sys
r = {c["name"]: c for c in json.loads(sys.argv[1])["checks"] if "host" not in c}
assert r["ezpz-version"]["status"] == "ok", r["ezpz-version"]
e = r["ezpz"]
assert e["status"] == "ok" and "doctor --nodes found the same binary at its path on every host" in e["message"], e
PY
out=$("$X" "${common[@]}" /tmp/ezpz-same doctor --hostfile "$D/hostfile" --json)
grep -q '"not on a shared filesystem' <<<"$out" || grep -q 'not on a shared filesystem' <<<"$out" ||
  fail "without --nodes the warning stays: $out"

# 3c. A node whose sshd is stopped (SIGSTOP: its port takes the connection, nothing answers):
#     named as silent past --timeout, not by the exit code of the ssh ezpz stopped.
printf 'node5\n' >"$D/hostfile5"
kill -STOP "$(cat "$D/nodes/node5/sshd.pid")"
out=$("$X" "${common[@]}" "$ezpz" doctor --hostfile "$D/hostfile5" --nodes --timeout 3 2>&1)
kill -CONT "$(cat "$D/nodes/node5/sshd.pid")"
grep -q '^\[FAIL\] node (node5): no answer from node5 within 3 s' <<<"$out" || fail "a silent node: $out"
grep -q 'exit 143' <<<"$out" && fail "a silent node named by an exit code: $out"

# 4. node3's sshd is down: exit 1, node3 named, the other seven fine.
"$sim/stop-sshd.sh" node3 || fail "node3's sshd would not stop"
# (a refused connection fails at once: the generous timeout only spares the healthy nodes, each
# of which starts a sanitizer-built ezpz, a failure for being slow)
out=$(doctor --nodes --timeout 60)
rc=$?
[ "$rc" -eq 1 ] || fail "sshd down: exit $rc, wanted 1: $out"
grep -q '^\[FAIL\] nodes: 7 of 8 hosts answered .*no answer from node3' <<<"$out" || fail "sshd down summary: $out"
grep -q '^\[FAIL\] node (node3): ' <<<"$out" || fail "sshd down: node3's line: $out"
grep -q 'node (node[^3])' <<<"$out" && fail "sshd down: a healthy node reported: $out"
out=$(doctor --nodes --json --timeout 60)
python3 - "$out" <<'PY' || fail "sshd down --json: $out"
import json, sys
r = json.loads(sys.argv[1])["checks"]
bad = [c for c in r if c.get("host") and c["status"] != "ok"]
assert [c["host"] for c in bad] == ["node3"] and bad[0]["status"] == "error", bad
assert bad[0]["remedy"], bad
PY
# ... and the launch probe fails too, naming what went wrong.
out=$(doctor --launch --launcher mpirun --timeout 20 --json)
rc=$?
[ "$rc" -eq 1 ] || fail "launch probe with sshd down: exit $rc: $out"

[ "$fails" -eq 0 ] && echo "cluster doctor: all passed"
exit $((fails > 0))

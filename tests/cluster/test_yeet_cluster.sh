#!/usr/bin/env bash
# ezpz yeet to every node of a simulated 8-node cluster: a real venv, a tarball, a node whose
# sshd is down, a node with a tiny /tmp, a corrupt archive, Ctrl-C mid-stream, a relay killed
# mid-stream. Brings the test bed up and tears it down itself.
export EZSIM_DIR=/var/tmp/ezpz-ctest-yeet EZSIM_PREFIX=ezpzy EZSIM_NET=10.250.22 EZSIM_TMP_SIZE_node5=40m
W=/var/tmp/ezpz-ctest-yeet-src
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 8
common=(env EZPZ_MACHINE=local HOME="$D/home")
on() { "$X" ssh "$1" "${@:2}"; }  # run a command on a node over ssh, from the login node
nodes="node1 node2 node3 node4 node5 node6 node7 node8"
no_staging() {  # no work directories left beside the destination on any node
  local n
  for n in login $nodes; do
    local left
    if [ "$n" = login ]; then left=$("$X" sh -c 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'); else left=$(on "$n" 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'); fi
    [ -z "$left" ] || fail "$1: leftover on $n: $left"
  done
}

# Wait (up to 60 s: the asan preset on 2 busy cores) until a relay matching pattern $1 has its work
# directory beside destination $2 (seen through its own mount namespace): the transfer is under way.
wait_work_dir() {
  local pid _
  for _ in $(seq 1 1200); do
    for pid in $(pgrep -f -- "$1"); do
      ls -d "/proc/$pid/root$2".ezpz-tmp-* >/dev/null 2>&1 && return 0
    done
    sleep 0.05
  done
  return 1
}
# Wait (up to 60 s) until no work directory is left on the login node or any node (then
# no_staging says which are, if some still are).
wait_no_staging() {
  local n _
  for _ in $(seq 1 60); do
    for n in login $nodes; do
      if [ "$n" = login ]; then "$X" sh -c 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'; else on "$n" 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'; fi
    done | grep -q . || return 0
    sleep 1
  done
  return 1
}

# SIGKILL the relay matching pattern $1 (anchored: the head's transport to it names the same
# command) once it is writing into its work directory beside
# destination $2 (seen through the relay's own mount namespace: each node has its own /tmp).
kill_relay_mid_stream() {
  local pid="" _
  for _ in $(seq 1 400); do
    pid=$(pgrep -f -- "$1" | head -1)
    [ -n "$pid" ] && ls -d "/proc/$pid/root$2".ezpz-tmp-* >/dev/null 2>&1 && break
    pid=""
    sleep 0.05
  done
  [ -n "$pid" ] || return 1
  sleep 0.3
  kill -KILL "$pid"
}

# A real venv (with a console script) in a path with a space.
venv="$W/my env"
/usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q --no-index \
  "$(/usr/bin/python3 "$src/tests/data/make_wheel.py" "$W")" || { echo "FAIL: cannot build the test venv"; exit 1; }

# 1. The venv to all 8 nodes (tree of fan-out 2: three levels), usable on each.
out=$("$X" "${common[@]}" "$ezpz" yeet "$venv" --dst "/tmp/my env" --hostfile "$D/hostfile" --fanout 2 --json)
rc=$?
[ "$rc" -eq 0 ] || fail "venv to 8 nodes exited $rc: $out"
for n in $nodes; do
  got=$(on "$n" '"/tmp/my env/bin/python" -c "import sys; print(sys.prefix)"; "/tmp/my env/bin/tinypkg-hello"' 2>&1)
  [ "$got" = "$(printf '/tmp/my env\ntinypkg hello from /tmp/my env')" ] || fail "venv on $n: $got"
done
python3 - "$out" <<'PY' || fail "venv --json report: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["succeeded"] == 9 and r["failed"] == [] and r["threshold_met"], r
assert all(n["ok"] and n["digest_ok"] and n["bytes"] > 0 for n in r["remote"]), r["remote"]
assert len(r["remote"]) == 8
PY
no_staging "venv"
# ... and to 4 nodes (tree of two levels), with the venv's python run on each.
head -4 "$D/hostfile" > "$W/four"
"$X" "${common[@]}" "$ezpz" yeet "$venv" --dst /tmp/venv4 --hostfile "$W/four" >/dev/null 2>&1 || fail "venv to 4 nodes"
for n in node1 node2 node3 node4; do
  got=$(on "$n" '/tmp/venv4/bin/python -c "import tinypkg, sys; print(sys.prefix)"' 2>&1)
  [ "$got" = /tmp/venv4 ] || fail "venv on $n (4 nodes): $got"
done

# 2. A tarball source (tar-env) and a plain directory, by the tree and the greedy strategy:
#    identical trees everywhere.
"${common[@]}" "$ezpz" tar-env "$venv" -o "$W/env.tar.zst" >/dev/null || fail "tar-env"
"$X" "${common[@]}" "$ezpz" yeet "$W/env.tar.zst" --dst /tmp/fromtar --hostfile "$D/hostfile" >/dev/null || fail "tarball to 8 nodes"
mkdir -p "$W/data/sub"; head -c 300000 /dev/urandom > "$W/data/sub/blob"; echo hi > "$W/data/a.txt"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data --hostfile "$D/hostfile" >/dev/null || fail "directory to 8 nodes"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data-greedy --hostfile "$D/hostfile" --strategy greedy \
  >/dev/null || fail "greedy strategy to 8 nodes"
want=$(cd "$W/data" && find . -type f -exec sha256sum {} + | sort)
for n in $nodes; do
  # (every copy also holds yeet's manifest, .ezpz-manifest, for the next incremental yeet)
  got=$(on "$n" 'cd /tmp/data && find . -type f ! -name .ezpz-manifest ! -name .ezpz-yeet -exec sha256sum {} + | sort')
  [ "$got" = "$want" ] || fail "directory tree differs on $n"
  on "$n" 'test -f /tmp/data/.ezpz-manifest' || fail "no manifest in /tmp/data on $n"
  got=$(on "$n" 'cd /tmp/data-greedy && find . -type f ! -name .ezpz-manifest ! -name .ezpz-yeet -exec sha256sum {} + \
    | sort')
  [ "$got" = "$want" ] || fail "the greedy strategy's tree differs on $n"
  on "$n" '/tmp/fromtar/bin/tinypkg-hello' | grep -qx "tinypkg hello from /tmp/fromtar" || fail "tarball venv on $n"
done

# 2b. What yeet did not make is not replaced on any node: a file at the destination on node4, a
#     directory of someone's results on node6. Those two fail, untouched, naming --force; the
#     others get the copy; --force replaces both.
on node4 'echo mine > /tmp/guarded' || fail "cannot write on node4"
on node6 'mkdir -p /tmp/guarded && echo 1,2 > /tmp/guarded/results.csv' || fail "cannot write on node6"
out=$("$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/guarded --hostfile "$D/hostfile" --json 2>/dev/null)
[ $? -eq 1 ] || fail "a node whose destination yeet did not make must fail"
python3 - "$out" <<'PY' || fail "foreign-destination report: $out"
import json, sys
r = json.loads(sys.argv[1])
assert sorted(r["failed"]) == ["node4", "node6"], r["failed"]
why = {n["host"]: n["error"] for n in r["remote"] if not n["ok"]}
assert "/tmp/guarded on node4 is a regular file" in why["node4"] and "--force" in why["node4"], why
assert "/tmp/guarded on node6 is a directory yeet did not make" in why["node6"], why
PY
[ "$(on node4 'cat /tmp/guarded')" = mine ] || fail "node4's file was touched"
[ "$(on node6 'ls -A /tmp/guarded')" = results.csv ] || fail "node6's directory was touched"
on node5 'test -f /tmp/guarded/a.txt' || fail "node5 did not get its copy beside the refusals"
no_staging "foreign destinations"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/guarded --hostfile "$D/hostfile" --force >/dev/null 2>&1 \
  || fail "--force must replace what yeet did not make"
for n in node4 node6; do on "$n" 'test -f /tmp/guarded/a.txt' || fail "--force: no copy on $n"; done

# 3. node5 has a 40 MB /tmp (about 20 MB used by now): it fails (disk full), the others succeed; no partial directory there.
head -c 45000000 /dev/urandom > "$W/data/big"
out=$("$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data2 --hostfile "$D/hostfile" --fanout 2 --json 2>/dev/null)
rc=$?
[ "$rc" -eq 1 ] || fail "a node short of disk must fail the default threshold (rc $rc)"
python3 - "$out" <<'PY' || fail "disk-full report: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["failed"] == ["node5"], r["failed"]
bad = [n for n in r["remote"] if n["host"] == "node5"][0]
# Refused as the entries come (the free space is known) or at ENOSPC: either names the cause.
assert "No space left on device" in bad["error"] or "free on the filesystem" in bad["error"], bad
assert sum(n["ok"] for n in r["remote"]) == 7
PY
on node5 'test ! -e /tmp/data2' || fail "node5 kept a partial /tmp/data2"
no_staging "disk full"
rm -f "$W/data/big"

# 4. node2's sshd is down: node2 fails, its subtree is served directly; thresholds decide the exit.
"$sim/stop-sshd.sh" node2 || fail "node2's sshd would not stop"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data3 --hostfile "$D/hostfile" --fanout 2 >/dev/null 2>&1
[ $? -eq 1 ] || fail "an unreachable node must fail the default threshold"
out=$("$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data3 --hostfile "$D/hostfile" --fanout 2 \
      --min-success-nodes 8 --json 2>/dev/null)
[ $? -eq 0 ] || fail "8 of 9 nodes meet --min-success-nodes 8"
python3 - "$out" <<'PY' || fail "unreachable-node report: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["failed"] == ["node2"] and r["succeeded"] == 8 and r["threshold_met"], r
# node2 never started: its children are fed by the head from the start
assert {n["host"]: n["reattached_to"] for n in r["remote"] if n["reattached_to"]} == {"node5": "login", "node6": "login"}, r
PY
"$X" test -f /tmp/data3/.ezpz-yeet-failed-nodes.txt || fail "no failed-nodes file"
"$X" grep -qx node2 /tmp/data3/.ezpz-yeet-failed-nodes.txt || fail "node2 not in the failed-nodes file"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data3 --hostfile "$D/hostfile" --min-success-fraction 0.95 \
  >/dev/null 2>&1
[ $? -eq 1 ] || fail "8 of 9 nodes miss --min-success-fraction 0.95"

# 5. A corrupt source archive: refused on the head, nothing sent.
head -c 100000 "$W/env.tar.zst" > "$W/cut.tar.zst"
"$X" "${common[@]}" "$ezpz" yeet "$W/cut.tar.zst" --dst /tmp/cut --hostfile "$D/hostfile" >/dev/null 2>&1
[ $? -eq 1 ] || fail "a truncated archive must fail"
for n in node1 node3; do on "$n" 'test ! -e /tmp/cut' || fail "truncated archive reached $n"; done
# 5b. The relays start while the head builds its own copy; when that fails late (an archive cut
#     near its end), they are stopped before any stream: nothing of them stays on any node.
mkdir -p "$W/late/d" && head -c 60000000 /dev/urandom > "$W/late/d/blob"
tar -C "$W/late" -cf - d | zstd -q -1 > "$W/late.tar.zst"
head -c 55000000 "$W/late.tar.zst" > "$W/late-cut.tar.zst"
"$X" "${common[@]}" "$ezpz" yeet "$W/late-cut.tar.zst" --dst /tmp/late --hostfile "$D/hostfile" -v >/dev/null \
  2> "$W/late.err"
[ $? -eq 1 ] || fail "an archive cut near its end must fail: $(tail -3 "$W/late.err")"
grep -q "relay to node.*: starting" "$W/late.err" || fail "late failure: no relay had started: $(cat "$W/late.err")"
wait_no_staging || no_staging "late failure"
for _ in $(seq 1 600); do "$sim/pgrep.sh" "__yeet-relay .*/tmp/late" >/dev/null || break; sleep 0.1; done
"$sim/pgrep.sh" -a "__yeet-relay .*/tmp/late" && fail "late failure: relays left running"
for n in node1 node3 node8; do on "$n" 'test ! -e /tmp/late' || fail "late failure: /tmp/late on $n"; done
rm -rf "$W/late" "$W/late.tar.zst" "$W/late-cut.tar.zst"

# 6. Ctrl-C mid-stream: every relay stops, no node keeps a partial directory.
head -c 150000000 /dev/urandom > "$W/data/huge"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data4 --hostfile "$D/hostfile" --copy >/dev/null 2>&1 &
pid=$!
# Ctrl-C once the relays write (a work directory on a node), not after a fixed delay.
wait_work_dir "^$ezpz __yeet-relay --host node[0-9] --children .* --dst /tmp/data4 " /tmp/data4 ||
  fail "Ctrl-C: no relay started writing /tmp/data4"
kill -INT "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C: exit $rc, wanted 130"
wait_no_staging  # the relays clean up after the head has gone: wait for that, then check
for n in node1 node3 node4 node6; do
  on "$n" 'test ! -e /tmp/data4' || fail "Ctrl-C left /tmp/data4 on $n"
done
no_staging "Ctrl-C"
rm -f "$W/data/huge"

# 7. A relay killed mid-stream (node3 feeds node7 and node8): node3 fails, its subtree is
#    re-attached to the head at once, nobody is left with a partial destination; the next run
#    cleans up.
#    (node2's sshd is down and node5's /tmp is small since the steps above: leave them out.)
head -c 150000000 /dev/urandom > "$W/data/huge"
printf 'node1\nnode3\nnode4\nnode6\nnode7\nnode8\n' > "$W/six"
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data5 --hostfile "$W/six" --fanout 2 --no-hsn \
  --min-success-nodes 6 --json > "$W/killed.json" 2>/dev/null &
pid=$!
relay3="^$ezpz __yeet-relay --host node3 --children .* --dst /tmp/data5 "
kill_relay_mid_stream "$relay3" /tmp/data5 || fail "no relay on node3 to kill"
wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "killed relay: 6 of 7 nodes should meet --min-success-nodes 6 (rc $rc)"
python3 - "$(cat "$W/killed.json")" <<'PY' || fail "killed-relay report: $(cat "$W/killed.json")"
import json, sys
r = json.loads(sys.argv[1])
assert r["failed"] == ["node3"], r["failed"]
assert {n["host"] for n in r["remote"] if n["ok"]} == {"node1", "node4", "node6", "node7", "node8"}, r
# node3's subtree is re-attached to the head mid-stream (replayed from its spool), not left for a repair
assert {n["host"]: n["reattached_to"] for n in r["remote"] if n["reattached_to"]} == {"node7": "login", "node8": "login"}, r
assert not any(n["repaired_from"] for n in r["remote"]), r
PY
on node3 'test ! -e /tmp/data5' || fail "node3 kept a partial /tmp/data5"
for n in node7 node8; do on "$n" 'test -f /tmp/data5/huge' || fail "$n was not repaired"; done
no_staging "killed relay"  # its watcher removed the killed relay's work directory
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data5 --hostfile "$W/six" >/dev/null 2>&1 || fail "rerun after the kill"
no_staging "killed relay, rerun"
#    The same with --no-reattach: node7 and node8 are repaired after the pass by a peer that
#    has the copy (node1, the first to succeed), not by the head.
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data5b --hostfile "$W/six" --fanout 2 --no-hsn --no-reattach \
  --min-success-nodes 6 --json > "$W/killed.json" 2>/dev/null &
pid=$!
relay3b="^$ezpz __yeet-relay --host node3 --children .* --dst /tmp/data5b "
kill_relay_mid_stream "$relay3b" /tmp/data5b || fail "no relay on node3 to kill (--no-reattach)"
wait "$pid" || fail "killed relay, --no-reattach: exit $?"
python3 - "$(cat "$W/killed.json")" <<'PY' || fail "killed-relay --no-reattach report: $(cat "$W/killed.json")"
import json, sys
r = json.loads(sys.argv[1])
assert r["failed"] == ["node3"], r["failed"]
assert {n["host"]: n["repaired_from"] for n in r["remote"] if n["repaired_from"]} == {"node7": "node1", "node8": "node1"}, r
PY
for n in node7 node8; do on "$n" 'test -f /tmp/data5b/huge' || fail "$n was not repaired (--no-reattach)"; done
no_staging "killed relay, --no-reattach"
rm -f "$W/data/huge"

# 8. The binary is not on the nodes (it runs from the login node's private /tmp): each relay
#    asks for it, gets it checked by SHA-256 into its own /tmp, and runs it; a second run finds
#    the cached copy. Through the system ssh client (--ssh-command ssh) as well.
"$X" cp "$ezpz" /tmp/ezpz-local
digest=$(sha256sum < "$ezpz" | cut -c1-16)
for n in node1 node8; do on "$n" 'test ! -e /tmp/ezpz-local' || fail "/tmp/ezpz-local should not exist on $n"; done
#    Every relay ships the binary on to its children before it says it is ready: under asan that
#    binary is over 200 MB (the real one 10 MB), so the children get the time to take it
#    (--stall-timeout; the stall itself is section 7's).
"$X" "${common[@]}" /tmp/ezpz-local yeet "$W/data" --dst /tmp/data6 --hostfile "$W/six" --stall-timeout 120 \
  >/dev/null 2>"$W/shipped.err" || fail "yeet with the binary shipped: $(tail -5 "$W/shipped.err")"
for n in node1 node3 node4 node6 node7 node8; do
  on "$n" "test -x /tmp/.ezpz-0-$digest/ezpz && test -f /tmp/data6/a.txt" || fail "binary not shipped to / data not on $n"
done
"$X" "${common[@]}" /tmp/ezpz-local yeet "$W/data" --dst /tmp/data7 --hostfile "$W/six" --ssh-command ssh \
  >/dev/null 2>&1 || fail "yeet with the cached binary, system ssh"
for n in node1 node8; do on "$n" 'test -f /tmp/data7/a.txt' || fail "data7 not on $n (--ssh-command ssh)"; done
no_staging "shipped binary"

# 9. Host keys: a node missing from known_hosts is refused with the fix named, accepted with
#    --accept-new-host-keys (and then recorded); a changed key is always refused.
kh=$D/dotssh/known_hosts
cp "$kh" "$W/known_hosts.orig"
grep -v '^node4,' "$W/known_hosts.orig" > "$kh"
out=$("$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data8 --hostfile "$W/six" --json 2>/dev/null)
[ $? -eq 1 ] || fail "an unknown host key must fail"
python3 - "$out" <<'PY' || fail "unknown-key report: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["failed"] == ["node4"], r["failed"]
err = [n["error"] for n in r["remote"] if n["host"] == "node4"][0]
assert "known_hosts" in err and "--accept-new-host-keys" in err, err
PY
"$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data8 --hostfile "$W/six" --accept-new-host-keys \
  >/dev/null 2>&1 || fail "--accept-new-host-keys"
grep -q '^node4 ' "$kh" || fail "node4's key was not added to known_hosts"
sed "s|^node4,\([^ ]*\) ssh-ed25519 .*|node4,\1 $(cut -d' ' -f1,2 "$D/dotssh/id_ed25519.pub")|" "$W/known_hosts.orig" > "$kh"
out=$("$X" "${common[@]}" "$ezpz" yeet "$W/data" --dst /tmp/data9 --hostfile "$W/six" --accept-new-host-keys --json 2>/dev/null)
[ $? -eq 1 ] || fail "a changed host key must fail"
python3 - "$out" <<'PY' || fail "changed-key report: $out"
import json, sys
r = json.loads(sys.argv[1])
err = [n["error"] for n in r["remote"] if n["host"] == "node4"][0]
assert r["failed"] == ["node4"] and "does not match" in err and "ssh-keygen -R node4" in err, err
PY
cp "$W/known_hosts.orig" "$kh"

bed_done "cluster yeet"

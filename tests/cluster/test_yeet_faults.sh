#!/usr/bin/env bash
# Fault injection on a simulated 6-node cluster during `ezpz yeet`.
#   test_yeet_faults.sh        a relay killed, a node's disk filled, a byte corrupted in flight
#                              (through a user's ssh; on the wire of the sealed TCP stream of the
#                              built-in one), a node's link dropped mid-transfer, a node whose
#                              ports but ssh's are closed (its stream goes inside SSH)
#   test_yeet_faults.sh stall  a relay stalled by SIGSTOP, through the built-in libssh transport
#                              and through OpenSSH (--ssh-command ssh)
#   test_yeet_faults.sh launcher  under --transport launcher (relays started by srun inside
#                              salloc, streaming over TCP): a node's disk filled, a byte flipped
#                              on the wire (a TCP segment altered with its checksum intact), a
#                              node's link dropped, a relay stalled by SIGSTOP; no agent left
# Each case must end with its documented outcome (docs/yeet.md: the faulty node fails alone, its
# subtree is re-attached, the exit code follows the threshold) within a bounded time, with no
# partial destination on any node. Prints a table of the results.
# Brings the test bed up and tears it down itself.
mode=${1:-faults}
export EZSIM_DIR=/var/tmp/ezpz-ctest-faults EZSIM_PREFIX=ezpzf EZSIM_NET=10.250.25
W=/var/tmp/ezpz-ctest-faults-src
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
LIMIT=${EZPZ_FAULT_LIMIT_S:-100}  # how long a yeet with one faulty node may take before it counts as hung
# The link-down case: one stall timeout (30 s) to notice the dead link, then the re-attached
# nodes' copies. (When each blocked libssh write gave up quietly after 30 s and took 256 KB
# more, it took 32, 62 or 92 s.)
LINK_LIMIT=${EZPZ_FAULT_LINK_LIMIT_S:-70}
table=()
bed_on_exit 'pkill -CONT -f -- "__yeet-relay --host node.* --dst /tmp/f" 2>/dev/null'
bed_on_exit 'pkill -f -- "$D/bin/freeze.py" 2>/dev/null'
via=() tx=()  # what runs yeet (nothing, or salloc) and which transport it takes
if [ "$mode" = launcher ]; then
  bed_up 6 --slurm
  cd "$D" || exit 1  # a directory every node has (slurmstepd changes into it)
  via=(salloc -N 6 --quiet) tx=(--transport launcher)
else
  bed_up 6
fi
mkdir -p "$W/data/sub"
common=(env EZPZ_MACHINE=local HOME="$D/home")
on() { "$X" ssh "$1" "${@:2}"; }
nodes="node1 node2 node3 node4 node5 node6"
# The relay tree (fan-out 2): login -> node1 (node3, node4), node2 (node5, node6).
printf '%s\n' $nodes > "$W/hosts"
echo small > "$W/data/a.txt"
head -c 80000000 /dev/urandom > "$W/data/sub/big"
want=$(cd "$W/data" && find . -type f -exec sha256sum {} + | sort)

leftovers() {  # work directories, spools or bundles beside a destination, on any node; agents
  local n
  [ "$mode" = launcher ] && "$sim/pgrep.sh" -a "__yeet-agent|__agent-stdio|srun --overlap"
  for n in login $nodes; do
    # (each node's own /tmp through its namespaces, not ssh: node2's link may be down)
    if [ "$n" = login ]; then "$X" sh -c 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'; else "$X" -n "$n" sh -c 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare | sed "s/^/$(hostname): /"'; fi
  done
}
no_staging() {
  local left
  left=$(leftovers)
  [ -z "$left" ] || { fail "$1: leftovers: $left"; return 1; }
}
same_tree() {  # node dst: the node holds exactly the source tree
  [ "$(on "$1" "cd '$2' 2>/dev/null && find . -type f ! -name '.ezpz-*' -exec sha256sum {} + | sort")" = "$want" ]
}
relay_pid() {  # node dst: the pid of that node's relay (processes of the namespaces are visible here): the
  # ezpz process itself, not the sh that starts it or an ssh whose command line names it
  pgrep -f -- "^$ezpz __yeet-relay --host $1 --children .* --dst $2( |\$)" | head -1
}
wait_relay() {  # node dst: wait for its relay to start and stream for a moment
  local _
  for _ in $(seq 1 1200); do [ -n "$(relay_pid "$1" "$2")" ] && break; sleep 0.05; done
  [ -n "$(relay_pid "$1" "$2")" ] || return 1
  sleep "${3:-0.3}"
}
yeet_bg() {  # dst out_json extra-args...: start a yeet to every node in the background (pid in $yeet_pid)
  local dst=$1 out=$2
  shift 2
  timeout -k 10 "$LIMIT" "$X" "${common[@]}" "${via[@]}" "$ezpz" yeet "$W/data" --dst "$dst" --hostfile "$W/hosts" \
    --fanout 2 --no-hsn --json "${tx[@]}" "$@" > "$out" 2> "$out.err" &
  yeet_pid=$!
  yeet_start=$(date +%s.%N)
}
yeet_now() {  # dst extra-args...: a yeet to every node, in the foreground
  local dst=$1
  shift
  "$X" "${common[@]}" "${via[@]}" "$ezpz" yeet "$W/data" --dst "$dst" --hostfile "$W/hosts" --no-hsn "${tx[@]}" "$@" \
    >/dev/null 2>&1
}
yeet_wait() {  # sets rc and secs
  wait "$yeet_pid"
  rc=$?
  secs=$(python3 -c "import time; print(f'{time.time() - $yeet_start:.1f}')")
}
# check_report json failed-host ok-hosts...: the report names exactly failed-host as failed
check_report() {
  python3 - "$@" <<'PY'
import json, sys
path, failed, ok = sys.argv[1], sys.argv[2], set(sys.argv[3:])
r = json.load(open(path))
assert r["failed"] == [failed], ("failed", r["failed"])
got = {n["host"] for n in r["remote"] if n["ok"] and n["digest_ok"]}
assert got == ok, ("ok", got)
bad = [n for n in r["remote"] if n["host"] == failed][0]
print(bad["error"].replace("\n", " ")[:70])
PY
}
clear() { local n; for n in $nodes; do on "$n" "rm -rf $1 $1.ezpz-spare"; done; "$X" rm -rf "$1" "$1.ezpz-spare"; }  # the copy and its spare
wait_no_staging() {  # label seconds: leftovers must go within that time (relays cut off by a fault)
  local _ start=$SECONDS
  for _ in $(seq 1 "$2"); do [ -z "$(leftovers)" ] && break; sleep 1; done
  no_staging "$1" && echo "$1: no leftovers after $((SECONDS - start)) s"
}
row() { table+=("$(printf '| %-36s | %-12s | %5s | %-s |' "$1" "$2" "$3" "$4")"); }
ok_hosts_but() { local n; for n in $nodes; do [ "$n" = "$1" ] || printf '%s ' "$n"; done; }

stall_case() {  # label extra-args...: SIGSTOP node3's relay (a leaf under node1) past the limit
  local label=$1 dst=/tmp/fstall$2
  shift 2
  yeet_bg "$dst" "$W/stall.json" --min-success-nodes 6 "$@"
  local stalled=""
  if wait_relay node3 "$dst"; then stalled=$(relay_pid node3 "$dst"); kill -STOP "$stalled"; else fail "$label: no relay on node3"; fi
  yeet_wait
  [ -n "$stalled" ] && kill -CONT "$stalled" 2>/dev/null
  if [ "$rc" -ge 124 ]; then
    fail "$label: a stopped relay hung the yeet past ${LIMIT}s (rc $rc)"
    row "$label" "HUNG" ">$LIMIT" "killed by the test's timeout (rc $rc)"
  else
    why=$(check_report "$W/stall.json" node3 $(ok_hosts_but node3)) ||
      fail "$label: the stalled node3 should fail alone: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("failed", r["failed"], [(n["host"], n["error"][:60], n["reattached_to"]) for n in r["remote"]])' "$W/stall.json")"
    [ "$rc" -eq 0 ] || fail "$label: 6 of 7 nodes meet --min-success-nodes 6 (rc $rc)"
    row "$label" "$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["failed"]) + " failed")' "$W/stall.json")" "$secs" "rc $rc; $why"
  fi
  wait_no_staging "$label" 60
  clear "$dst"
}

kill_case() {  # a leaf relay (node4, level 2) SIGKILLed mid-stream
  yeet_bg /tmp/fkill "$W/kill.json" --min-success-nodes 6
  if wait_relay node4 /tmp/fkill; then kill -KILL "$(relay_pid node4 /tmp/fkill)"; else fail "kill: no relay on node4"; fi
  yeet_wait
  why=$(check_report "$W/kill.json" node4 $(ok_hosts_but node4)) || fail "kill: report $(cat "$W/kill.json" "$W/kill.json.err")"
  [ "$rc" -eq 0 ] || fail "kill: 6 of 7 nodes meet --min-success-nodes 6 (rc $rc)"
  on node4 'test ! -e /tmp/fkill' || fail "kill: node4 kept a partial /tmp/fkill"
  for n in $(ok_hosts_but node4); do same_tree "$n" /tmp/fkill || fail "kill: tree differs on $n"; done
  # A SIGKILLed relay cannot remove its work directory: the next yeet to that destination does.
  yeet_now /tmp/fkill || fail "kill: the rerun failed"
  same_tree node4 /tmp/fkill || fail "kill: node4 lacks the copy after the rerun"
  no_staging "kill, rerun" && row "relay SIGKILLed (node4, leaf)" "node4 failed" "$secs" "rc $rc; $why"
  clear /tmp/fkill
}
disk_case() {  # node6 has 20 MB left
  on node6 'fallocate -l $(( $(df --output=avail -B1 /tmp | tail -1) - 20000000 )) /tmp/filler' || fail "disk: cannot fill node6"
  yeet_bg /tmp/fdisk "$W/disk.json"
  yeet_wait
  why=$(check_report "$W/disk.json" node6 $(ok_hosts_but node6)) || fail "disk: report $(cat "$W/disk.json" "$W/disk.json.err")"
  [ "$rc" -eq 1 ] || fail "disk: a failed node misses the default threshold (rc $rc)"
  grep -Eq "No space left on device|needs more than the" <<< "$why" || fail "disk: error does not name the full disk: $why"
  on node6 'test ! -e /tmp/fdisk' || fail "disk: node6 kept a partial /tmp/fdisk"
  [ "$(on node6 'ls -A /tmp')" = filler ] || fail "disk: node6's /tmp holds more than the filler: $(on node6 'ls -A /tmp')"
  on node6 'rm -f /tmp/filler'
  clear /tmp/fdisk
  no_staging "disk" && row "disk full (node6)" "node6 failed" "$secs" "rc $rc; $why"

}
corrupt_case() {  # a byte flipped in the stream to node5 before ssh (the old copy kept)
  # The old copy is there first: node5 must keep it exactly; a wrapper ssh flips one byte 3 MB
  # into the stream it forwards to node5 (and only to node5).
  yeet_now /tmp/fcorrupt || fail "corrupt: the first (clean) copy failed"
  old=$(on node5 'find /tmp/fcorrupt -type f -exec sha256sum {} + | sort')
  cat > "$D/bin/flip.py" <<'PY'
import os, sys
at, seen = 3_000_000, 0
while True:
    b = os.read(0, 1 << 16)
    if not b:
        break
    if seen <= at < seen + len(b):
        b = bytearray(b); b[at - seen] ^= 0x5A; b = bytes(b)
    seen += len(b)
    while b:
        b = b[os.write(1, b):]
PY
  cat > "$D/bin/flipssh" <<SH
#!/bin/bash
# ssh that corrupts the stream to node5 only
if [ "\$1" = node5 ]; then python3 $D/bin/flip.py | exec ssh "\$@"; else exec ssh "\$@"; fi
SH
  chmod +x "$D/bin/flipssh"
  echo changed > "$W/data/a.txt"
  want=$(cd "$W/data" && find . -type f -exec sha256sum {} + | sort)
  yeet_bg /tmp/fcorrupt "$W/corrupt.json" --ssh-command "$D/bin/flipssh" --full
  yeet_wait
  why=$(check_report "$W/corrupt.json" node5 $(ok_hosts_but node5)) || fail "corrupt: report $(cat "$W/corrupt.json" "$W/corrupt.json.err")"
  [ "$rc" -eq 1 ] || fail "corrupt: a failed node misses the default threshold (rc $rc)"
  [ "$(on node5 'find /tmp/fcorrupt -type f -exec sha256sum {} + | sort')" = "$old" ] || fail "corrupt: node5's old copy changed"
  for n in $(ok_hosts_but node5); do same_tree "$n" /tmp/fcorrupt || fail "corrupt: tree differs on $n"; done
  no_staging "corrupt" && row "byte flipped in flight (node5)" "node5 failed" "$secs" "rc $rc; old copy kept; $why"
  clear /tmp/fcorrupt
}
wire_case() {  # a TCP segment to node5 altered on the wire (the old copy kept)
  # node2 streams to node5 over sealed TCP (to its agent, or to the `ezpz __ssh-tcp` sshd started
  # there: the ssh transport's stream does not go through sshd); tap_flip.py, in node5's network namespace, swaps two
  # words of the segment that carries byte 3,000,000 from node2 (its TCP checksum unchanged, so
  # TCP hands the altered bytes on): the sealed record fails its tag, node5 fails alone.
  yeet_now /tmp/fwire || fail "wire: the first (clean) copy failed"
  old=$(on node5 'find /tmp/fwire -type f -exec sha256sum {} + | sort')
  ip netns exec "$EZSIM_PREFIX-node5" python3 "$src/tests/cluster/tap_flip.py" eth0 "$EZSIM_NET.12" 3000000 \
    > "$W/flip.log" 2>&1 &
  local flipper=$! _
  for _ in $(seq 1 100); do grep -q ready "$W/flip.log" && break; sleep 0.1; done
  grep -q ready "$W/flip.log" || fail "wire: tap_flip.py did not start: $(cat "$W/flip.log")"
  echo changed again > "$W/data/a.txt"
  want=$(cd "$W/data" && find . -type f -exec sha256sum {} + | sort)
  yeet_bg /tmp/fwire "$W/wire.json" --full
  yeet_wait
  ip netns exec "$EZSIM_PREFIX-node5" tc qdisc del dev eth0 ingress
  kill "$flipper"
  wait "$flipper" 2>/dev/null
  grep -q flipped "$W/flip.log" || fail "wire: no segment was altered: $(cat "$W/flip.log")"
  why=$(check_report "$W/wire.json" node5 $(ok_hosts_but node5)) || fail "wire: report $(cat "$W/wire.json" "$W/wire.json.err")"
  grep -q "failed its authentication" <<< "$why" || fail "wire: the error does not say why: $why"
  [ "$rc" -eq 1 ] || fail "wire: a failed node misses the default threshold (rc $rc)"
  [ "$(on node5 'find /tmp/fwire -type f -exec sha256sum {} + | sort')" = "$old" ] || fail "wire: node5's old copy changed"
  for n in $(ok_hosts_but node5); do same_tree "$n" /tmp/fwire || fail "wire: tree differs on $n"; done
  wait_no_staging "wire" 60 && row "segment altered on the wire (node5)" "node5 failed" "$secs" "rc $rc; old copy kept; $why"
  clear /tmp/fwire
}
closed_ports_case() {  # node5 takes TCP on port 22 alone (a site firewall): its stream goes inside SSH
  # tc on node5's ingress passes ssh's segments and sends every other TCP segment to a veth that
  # is down (dropped), so node2's connection to the port node5's `ezpz __ssh-tcp` offers never
  # opens: after 3 s node2 declines, and the relay runs in place, fed through the SSH channel as
  # before. Every node gets the copy.
  local ns="$EZSIM_PREFIX-node5" held
  ip netns exec "$ns" ip link add hole0 type veth peer name hole1
  ip netns exec "$ns" tc qdisc add dev eth0 ingress
  ip netns exec "$ns" tc filter add dev eth0 parent ffff: protocol ip prio 1 u32 \
    match ip protocol 6 0xff match ip dport 22 0xffff flowid ffff:1
  ip netns exec "$ns" tc filter add dev eth0 parent ffff: protocol ip prio 2 u32 match ip protocol 6 0xff \
    action mirred egress redirect dev hole0
  yeet_bg /tmp/fports "$W/ports.json"
  yeet_wait
  # the offered port was tried (its segments held back), so the copy came inside SSH
  held=$(ip netns exec "$ns" tc -s filter show dev eth0 parent ffff: | grep -o 'Sent [0-9]* bytes [0-9]* pkt' |
    awk '{s += $4} END {print s + 0}')
  ip netns exec "$ns" tc qdisc del dev eth0 ingress
  ip netns exec "$ns" ip link del hole0
  [ "$held" -gt 0 ] || fail "closed ports: no TCP segment to node5 was held back: the case tested nothing"
  python3 - "$W/ports.json" <<'PY' || fail "closed ports: not every node succeeded: $(cat "$W/ports.json" "$W/ports.json.err")"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["failed"], r["failed"]
assert all(n["ok"] and n["digest_ok"] for n in r["remote"]), r["remote"]
PY
  [ "$rc" -eq 0 ] || fail "closed ports: rc $rc"
  for n in $nodes; do same_tree "$n" /tmp/fports || fail "closed ports: tree differs on $n"; done
  no_staging "closed ports" && row "TCP closed but ssh (node5)" "all ok" "$secs" "rc $rc; node5 streamed inside SSH"
  clear /tmp/fports
}
link_case() {  # node2 (level 1) loses its link mid-transfer
  # node2 feeds node5 and node6: node2 fails, its children are re-attached to the head.
  yeet_bg /tmp/flink "$W/link.json" --min-success-nodes 6
  if wait_relay node2 /tmp/flink 0.5; then ip netns exec "$EZSIM_PREFIX-node2" ip link set eth0 down; else fail "link: no relay on node2"; fi
  link_down=$SECONDS
  yeet_wait
  if [ "$rc" -ge 124 ]; then
    fail "link: a node whose link went down hung the yeet past ${LIMIT}s (rc $rc)"
    row "link down (node2, interior)" "HUNG" ">$LIMIT" "killed by the test's timeout (rc $rc)"
  else
    why=$(check_report "$W/link.json" node2 $(ok_hosts_but node2)) || fail "link: report $(cat "$W/link.json" "$W/link.json.err")"
    [ "$rc" -eq 0 ] || fail "link: 6 of 7 nodes meet --min-success-nodes 6 (rc $rc)"
    python3 -c "import sys; sys.exit(float('$secs') > $LINK_LIMIT)" ||
      fail "link: the dead link took ${secs}s to be noticed and worked around (more than ${LINK_LIMIT}s)"
    row "link down (node2, interior)" "node2 failed" "$secs" "rc $rc; $why"
  fi
  # The link stays down: no end of file can reach node2's relay, nor the relays node2 started on
  # node5 and node6 (its children before the head re-attached them). Each must see that its parent
  # has said nothing, not even a keepalive, for the head's stall timeout + 10 s (40 s), and discard
  # its work. node2's relay first gives up on its own children, whose links are down too: up to its
  # stall timeout (28 s) for each, since their ssh connections' socket buffers can fill at
  # different times. So nothing may be left on any node 2 x 28 + 40 s (+ 24 s of slack) after the
  # link went down. (Before, they waited for their parent's stream for as long as the link was
  # down, and after it for as long as TCP took to notice, if ever: CI once found them still there
  # 215 s after the fault.)
  "$X" -n node2 test ! -e /tmp/flink || fail "link: node2 kept a partial /tmp/flink"
  while [ $((SECONDS - link_down)) -lt 120 ] && [ -n "$(leftovers)" ]; do sleep 1; done
  left=$(leftovers)
  if [ -n "$left" ]; then
    fail "link: leftovers $((SECONDS - link_down)) s after the link went down (still down): $left"
  else
    echo "link: no leftovers $((SECONDS - link_down)) s after the link went down (still down)"
  fi
  ip netns exec "$EZSIM_PREFIX-node2" ip link set eth0 up
}

if [ "$mode" = stall ]; then
# --stall-timeout 10 at the head: node1 (node3's parent) gives up on it after 8 s.
stall_case "relay SIGSTOPped (node3), libssh" a --stall-timeout 10
stall_case "relay SIGSTOPped (node3), OpenSSH" b --stall-timeout 10 --ssh-command ssh
# A node whose relay never starts (its login hangs: a wrapper ssh sleeps instead of connecting
# to node3): node1 waits for it no longer than its own stall timeout, since the head streams to
# node1 meanwhile and would drop node1 (and with it node4) after 10 s of not reading.
cat > "$D/bin/hungssh" <<'SH'
#!/bin/bash
if [ "$1" = node3 ]; then exec sleep 120; else exec ssh "$@"; fi
SH
chmod +x "$D/bin/hungssh"
yeet_bg /tmp/fstallc "$W/stall.json" --min-success-nodes 6 --stall-timeout 10 --ssh-command "$D/bin/hungssh"
yeet_wait
label="node3 never ready (hung login)"
if [ "$rc" -ge 124 ]; then
  fail "$label: a node that never starts hung the yeet past ${LIMIT}s (rc $rc)"
  row "$label" "HUNG" ">$LIMIT" "killed by the test's timeout (rc $rc)"
else
  why=$(check_report "$W/stall.json" node3 $(ok_hosts_but node3)) ||
    fail "$label: node3 should fail alone: $(cat "$W/stall.json" "$W/stall.json.err")"
  grep -q "not ready within 8 s" <<< "$why" || fail "$label: the error does not say why: $why"
  [ "$rc" -eq 0 ] || fail "$label: 6 of 7 nodes meet --min-success-nodes 6 (rc $rc)"
  row "$label" "node3 failed" "$secs" "rc $rc; $why"
fi
kill $("$sim/pgrep.sh" "^sleep 120$") 2>/dev/null
wait_no_staging "$label" 60
clear /tmp/fstallc

# After the stream a parent only reads: a relay whose return path freezes once it has taken the
# whole stream (its result line and heartbeats never arrive) must be dropped after the stall
# timeout, not waited for. A wrapper ssh holds back everything FROZEN says from its own result on.
cat > "$D/bin/freeze.py" <<'PY'
import os, sys, time
tag = ('"host":"%s"' % sys.argv[1]).encode()
buf = b""
while True:
    b = os.read(0, 1 << 16)
    if not b:
        break
    buf += b
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        if tag in line:
            time.sleep(60)
            sys.exit(0)
        os.write(1, line + b"\n")
PY
freeze_case() {  # label frozen-host dst
  local label=$1 frozen=$2 dst=$3
  cat > "$D/bin/freezessh" <<SH
#!/bin/bash
# (the filter's stderr is not the session's: a process left holding it would keep its parent's channel open)
if [ "\$1" = $frozen ]; then ssh "\$@" | /usr/bin/python3 $D/bin/freeze.py $frozen 2>/dev/null; else exec ssh "\$@"; fi
SH
  chmod +x "$D/bin/freezessh"
  yeet_bg "$dst" "$W/freeze.json" --min-success-nodes 6 --stall-timeout 10 --ssh-command "$D/bin/freezessh"
  yeet_wait
  pkill -f -- "$D/bin/freeze.py" 2>/dev/null
  if [ "$rc" -ge 124 ]; then
    fail "$label: a silent relay hung the yeet past ${LIMIT}s (rc $rc)"
    row "$label" "HUNG" ">$LIMIT" "killed by the test's timeout (rc $rc)"
  else
    why=$(check_report "$W/freeze.json" "$frozen" $(ok_hosts_but "$frozen")) ||
      fail "$label: $frozen should fail alone: $(cat "$W/freeze.json" "$W/freeze.json.err")"
    grep -q "said nothing for" <<< "$why" || fail "$label: the error does not say why: $why"
    [ "$rc" -eq 0 ] || fail "$label: 6 of 7 nodes meet --min-success-nodes 6 (rc $rc)"
    for n in $(ok_hosts_but "$frozen"); do same_tree "$n" "$dst" || fail "$label: tree differs on $n"; done
    row "$label" "$frozen failed" "$secs" "rc $rc; $why"
  fi
  wait_no_staging "$label" 60
  clear "$dst"
}
# A leaf (node3): node1 drops it after 8 s. An interior relay (node1): the head drops it after
# 10 s; node3's and node4's results went through it, so they are repaired from a peer.
freeze_case "silent after the stream (node3)" node3 /tmp/ffreeze3
freeze_case "silent after the stream (node1)" node1 /tmp/ffreeze1
elif [ "$mode" = launcher ]; then
  disk_case
  wire_case
  stall_case "relay SIGSTOPped (node3), launcher" l --stall-timeout 10
  link_case  # last: Slurm holds node2 until it hears from it again
else
  kill_case
  disk_case
  corrupt_case
  wire_case
  closed_ports_case
  link_case
fi

echo
echo "| fault                                | outcome      |     s | details |"
echo "|--------------------------------------|--------------|-------|---------|"
printf '%s\n' "${table[@]}"
echo
[ "$fails" -eq 0 ] && echo "yeet fault injection: all passed" || echo "yeet fault injection: $fails failure(s)"
[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# ezpz yeet --transport launcher on a simulated 4-node cluster with real Slurm: a PBS-like job
# whose agents MPICH's mpiexec starts; then, with every node's sshd stopped (ssh proven to fail),
# relays started by srun inside salloc and sbatch (auto picks the launcher there), the venv usable
# on every node; --no-encrypt; a foreign client at an agent's port refused while a run goes on
# unharmed; a relay killed mid-stream; Ctrl-C leaving nothing on any node.
# Brings the test bed up and tears it down itself.
export EZSIM_DIR=/var/tmp/ezpz-ctest-agents EZSIM_PREFIX=ezpzg EZSIM_NET=10.250.25
W=/var/tmp/ezpz-ctest-agents-src
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 4 --slurm --mpich
cd "$D" || exit 1  # a directory every node has (slurmstepd changes into it)
common=(env EZPZ_MACHINE=local HOME="$D/home")
nodes="node1 node2 node3 node4"
# on NODE CMD: run CMD in a node's namespaces, through its slurmd (sshd is stopped below).
on() { nsenter -t "$(cat "$D/slurm/d-$1.pid")" -n -m -u sh -c "$2"; }
report() {  # report JSON PYTHON-ASSERTIONS...: the yeet --json report checked
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
exec(sys.argv[2])
PY
}
no_staging() {  # no work directory beside any destination, on the login node or any node
  local n left
  left=$("$X" sh -c 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare')
  for n in $nodes; do left+=$(on "$n" 'ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare'); done
  [ -z "$left" ] || fail "$1: work directories left: $left"
}
# Wait (up to 60 s) until a relay of pattern $1 on node $2 writes beside destination $3.
wait_relay() {
  local pid _
  for _ in $(seq 1 1200); do
    for pid in $(pgrep -f -- "$1"); do
      [ "$(readlink "/proc/$pid/ns/uts")" = "$(readlink "/proc/$(cat "$D/slurm/d-$2.pid")/ns/uts")" ] &&
        ls -d "/proc/$pid/root$3".ezpz-tmp-* >/dev/null 2>&1 && { echo "$pid"; return 0; }
    done
    sleep 0.05
  done
  return 1
}
# Wait (up to 60 s) until no ezpz agent, relay or srun step of ours is left anywhere.
wait_no_ezpz() {
  local _ rc
  for _ in $(seq 1 600); do
    "$sim/pgrep.sh" "(__yeet-agent|__yeet-relay|__agent-stdio)|srun --overlap" >/dev/null
    rc=$?
    [ "$rc" -eq 1 ] && return 0  # none (2: no bed to look in)
    [ "$rc" -eq 2 ] && return 1
    sleep 0.1
  done
  return 1
}

venv="$W/my env"
/usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q --no-index \
  "$(/usr/bin/python3 "$src/tests/data/make_wheel.py" "$W")" || { echo "FAIL: cannot build the test venv"; exit 1; }
mkdir -p "$W/data"
head -c 300000 /dev/urandom > "$W/data/blob"

# 1. A PBS-like job (the hostfile, MPICH's mpiexec standing in for PALS): the agents on all four
#    nodes are started by mpiexec; every node gets the venv.
pbs=(env PBS_JOBID=1.sim PBS_NODEFILE="$D/hostfile" PATH="$D/mpich/bin:$PATH")
out=$("$X" "${common[@]}" "${pbs[@]}" "$ezpz" yeet "$venv" --dst /tmp/vpbs --transport launcher --json)
[ $? -eq 0 ] || fail "PBS-like job, mpiexec: exit $?: $out"
report "$out" '
assert r["transport_kind"] == "launcher", r["transport"]
assert "mpiexec (mpich)" in r["transport_why"], r["transport_why"]
assert r["succeeded"] == 5 and r["failed"] == [], r' || fail "PBS-like report: $out"
for n in $nodes; do
  on "$n" '/tmp/vpbs/bin/tinypkg-hello' | grep -qx "tinypkg hello from /tmp/vpbs" || fail "PBS-like venv on $n"
done
wait_no_ezpz || fail "PBS-like job: agents or relays left running"

# 2. No SSH from here on: every node's sshd stopped, and ssh proven to fail.
"$sim/stop-sshd.sh" $nodes || fail "the nodes' sshd would not stop"
for n in $nodes; do
  "$X" ssh -o ConnectTimeout=5 -o BatchMode=yes "$n" true 2>/dev/null && fail "ssh to $n still works"
done

# 3. salloc: --transport launcher, srun starts the agents; the venv (a path with a space) usable everywhere.
out=$("$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$venv" --dst "/tmp/my env" --transport launcher --json 2>/dev/null)
[ $? -eq 0 ] || fail "salloc, --transport launcher: $out"
report "$out" '
assert r["transport_kind"] == "launcher" and "srun" in r["transport"], r["transport"]
assert r["succeeded"] == 5 and r["failed"] == [] and len(r["remote"]) == 4, r
assert all(n["ok"] and n["digest_ok"] for n in r["remote"]), r["remote"]' || fail "salloc report: $out"
for n in $nodes; do
  got=$(on "$n" '"/tmp/my env/bin/python" -c "import sys; print(sys.prefix)"; "/tmp/my env/bin/tinypkg-hello"' 2>&1)
  [ "$got" = "$(printf '/tmp/my env\ntinypkg hello from /tmp/my env')" ] || fail "venv on $n: $got"
done
no_staging "salloc"
wait_no_ezpz || fail "salloc: agents or relays left running"

# doctor --nodes and kill --all-nodes through the same agents.
out=$("$X" "${common[@]}" salloc -N 4 "$ezpz" doctor --nodes --transport launcher --json 2>/dev/null)
report "$out" '
r = r["checks"]
hosts = {c["host"]: c for c in r if c.get("host")}
assert sorted(hosts) == ["node1", "node2", "node3", "node4"], sorted(hosts)
assert all(c["status"] == "ok" for c in hosts.values()), hosts
assert "all 4 hosts answered" in [c for c in r if c["name"] == "nodes"][0]["message"], r' ||
  fail "doctor --nodes --transport launcher: $out"
out=$("$X" "${common[@]}" salloc -N 4 "$ezpz" kill --all-nodes --transport launcher --dry-run --json nothing-here \
  2>/dev/null)
[ "$(grep -c '"host":"node[1-4]","processes":\[\]' <<<"$out")" -eq 4 ] ||
  fail "kill --all-nodes --transport launcher should hear from 4 nodes: $out"
wait_no_ezpz || fail "doctor/kill: agents left running"

# 4. sbatch, transport not named: auto takes the launcher inside the job (from node1 to node2-3).
cat > "$D/yeet-job.sh" <<EOF
#!/bin/sh
exec "$ezpz" yeet "$venv" --dst /tmp/vbatch --json
EOF
chmod +x "$D/yeet-job.sh"
"$X" "${common[@]}" sbatch --wait -N 3 --output="$D/yeet-job.out" --error="$D/yeet-job.err" "$D/yeet-job.sh" \
  >/dev/null || fail "sbatch yeet failed: $(cat "$D/yeet-job.out" "$D/yeet-job.err")"
report "$(cat "$D/yeet-job.out")" '
assert r["transport_kind"] == "launcher" and r["transport_why"].startswith("auto: slurm job"), r["transport_why"]
assert r["succeeded"] == 3 and r["failed"] == [], r' || fail "sbatch report: $(cat "$D/yeet-job.out")"
for n in node2 node3; do
  on "$n" '/tmp/vbatch/bin/tinypkg-hello' | grep -qx "tinypkg hello from /tmp/vbatch" || fail "sbatch venv on $n"
done

# 5. The binary only in the login node's private /tmp: srun ships it (--bcast), each agent
#    removes its copy; nothing of it is left on the nodes.
"$X" cp "$ezpz" /tmp/ezpz-private
out=$("$X" "${common[@]}" salloc -N 4 /tmp/ezpz-private yeet "$W/data" --dst /tmp/shipped --json 2>/dev/null)
report "$out" 'assert r["failed"] == [] and r["succeeded"] == 5, r' || fail "binary shipped by srun: $out"
wait_no_ezpz || fail "shipped: agents or relays left running"
for n in $nodes; do
  left=$(on "$n" 'ls /tmp | grep -e slurm_bcast -e ezpz-private')
  [ -z "$left" ] || fail "the shipped binary was left on $n: $left"
  on "$n" 'test -f /tmp/shipped/blob' || fail "shipped: no copy on $n"
done

# 6. --no-encrypt: authenticated only; the plan says so.
out=$("$X" "${common[@]}" salloc -N 2 "$ezpz" yeet "$W/data" --dst /tmp/plain --no-encrypt --json 2>/dev/null)
report "$out" '
assert "not encrypted" in r["transport"] and r["failed"] == [], r' || fail "--no-encrypt: $out"

# 7. A stranger at an agent's port while a run streams: refused (a wrong secret, then not ezpz
#    at all), and the run goes on unharmed.
head -c 150000000 /dev/urandom > "$W/data/huge"
"$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/big --fanout 1 --json > "$W/big.json" 2>/dev/null &
pid=$!
relay=$(wait_relay "__yeet-relay --host node2 " node2 /tmp/big) || fail "stranger: no relay on node2"
# The agent of this run (an earlier run's may still be on its way out): the relay's session's parent.
ppid_of() { awk '{print $4}' "/proc/$1/stat"; }
agent=$(ppid_of "$(ppid_of "$relay")")
grep -q -- __yeet-agent "/proc/$agent/cmdline" || fail "stranger: the relay's grandparent $agent is not an agent"
agent_port=$(on node2 "ss -ltnpH | grep 'pid=$agent,' | awk '{print \$4}' | sed 's/.*://' | head -1")
# The head holds still meanwhile (SIGSTOP), so that the run cannot end, and its agents with it,
# between the two strangers; the relays wait for its stream.
head_pid=$(for p in $(pgrep -f -- "yeet $W/data --dst /tmp/big "); do [ "$(cat "/proc/$p/comm")" = ezpz ] && echo "$p"; done)
[ -n "$head_pid" ] && kill -STOP $head_pid || fail "stranger: no head to hold"
"$X" python3 - "$EZSIM_NET.12" "$agent_port" <<'PY' || fail "stranger: an agent talked to a client without the secret"
import os, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
def attempt(first):
    s = socket.create_connection((host, port), timeout=20)
    s.sendall(first)
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
            if len(got) >= 64:  # the agent's nonce and proof: answer with a wrong proof
                s.sendall(os.urandom(32))
                got += b"|"
    except ConnectionResetError:
        pass  # closed with our bytes unread: dropped all the same
    except socket.timeout:
        sys.exit("the agent kept the connection open")
    return got
wrong = attempt(b"EZPZAGT1\x01" + os.urandom(32))
assert len(wrong) == 65 and wrong.endswith(b"|"), wrong  # its proof, then the door closed
assert attempt(b"GET / HTTP/1.0\r\nHost: node2\r\nUser-Agent: x\r\n\r\n") == b""  # not ezpz: nothing at all
PY
[ -n "$head_pid" ] && kill -CONT $head_pid
wait "$pid" || fail "stranger: the run failed: $(cat "$W/big.json")"
report "$(cat "$W/big.json")" 'assert r["failed"] == [] and r["succeeded"] == 5, r' ||
  fail "stranger report: $(cat "$W/big.json")"
want=$(sha256sum < "$W/data/huge")
[ "$(on node2 'sha256sum < /tmp/big/huge')" = "$want" ] || fail "stranger: node2's copy differs"
no_staging "stranger"

# 8. A relay killed mid-stream (node1 feeds node2, fan-out 1): node1 fails, node2 onwards are
#    re-attached over TCP; nobody keeps a partial destination.
"$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/killed --fanout 1 --min-success-nodes 4 --json \
  > "$W/killed.json" 2>/dev/null &
pid=$!
relay=$(wait_relay "__yeet-relay --host node1 " node1 /tmp/killed) || fail "killed: no relay on node1"
[ -n "$relay" ] && kill -KILL "$relay"
wait "$pid" || fail "killed relay: 4 of 5 nodes meet --min-success-nodes 4 (exit $?)"
report "$(cat "$W/killed.json")" '
assert r["failed"] == ["node1"], r["failed"]
assert {n["host"] for n in r["remote"] if n["ok"]} == {"node2", "node3", "node4"}, r' ||
  fail "killed-relay report: $(cat "$W/killed.json")"
on node1 'test ! -e /tmp/killed' || fail "node1 kept a partial /tmp/killed"
for n in node2 node3 node4; do
  [ "$(on "$n" 'sha256sum < /tmp/killed/huge')" = "$want" ] || fail "killed relay: $n's copy differs"
done

# 8b. The same with --no-reattach: node2 onwards are repaired after the pass by a peer that has
#     the copy (through its agent: `ezpz __yeet-send`), not by the head.
"$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/killed2 --fanout 1 --no-reattach \
  --min-success-nodes 4 --json > "$W/killed2.json" 2>/dev/null &
pid=$!
relay=$(wait_relay "__yeet-relay --host node2 " node2 /tmp/killed2) || fail "no-reattach: no relay on node2"
[ -n "$relay" ] && kill -KILL "$relay"
wait "$pid" || fail "killed relay, --no-reattach: exit $?"
report "$(cat "$W/killed2.json")" '
assert r["failed"] == ["node2"], r["failed"]
assert {n["host"]: n["repaired_from"] for n in r["remote"] if n["repaired_from"]} == {"node3": "node1", "node4": "node1"}, r' ||
  fail "no-reattach report: $(cat "$W/killed2.json")"
for n in node3 node4; do
  [ "$(on "$n" 'sha256sum < /tmp/killed2/huge')" = "$want" ] || fail "no-reattach: $n's copy differs"
done
rm -f "$W/data/huge"

# 8c. Incremental: after a change, the next yeet to the same destination sends only the delta.
echo changed >> "$W/data/blob"
out=$("$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/killed --json 2>/dev/null)
report "$out" '
assert r["incremental"]["mode"] == "delta", r["incremental"]
assert r["failed"] == [] and r["succeeded"] == 5, r' || fail "incremental over the launcher: $out"
want_blob=$(sha256sum < "$W/data/blob")
for n in $nodes; do
  [ "$(on "$n" 'sha256sum < /tmp/killed/blob')" = "$want_blob" ] || fail "incremental: $n's blob differs"
done
head -c 150000000 /dev/urandom > "$W/data/huge"

# 9. Ctrl-C mid-stream, once every node's work directory holds thousands of files (their removal
#    takes a while): exit 130, and when ezpz returns every node is already clean (no copy, no
#    work, no relay, no agent). The step is ended only after the agents have ended, and each
#    agent only after its relays removed their work: a step's end kills whatever of it is left
#    (under Slurm's proctrack/cgroup, a relay still removing its work too).
python3 -c '
import os, sys
for d in range(40):
    os.makedirs(f"{sys.argv[1]}/{d}")
    for f in range(500):
        open(f"{sys.argv[1]}/{d}/{f}", "w").write(f"{d}.{f}")' "$W/data/a-many"
"$X" "${common[@]}" salloc -N 4 "$ezpz" yeet "$W/data" --dst /tmp/stopped --fanout 1 >/dev/null 2>&1 &
pid=$!
relay=$(wait_relay "__yeet-relay --host node4 " node4 /tmp/stopped) || fail "Ctrl-C: no relay on node4"
entries=0
for _ in $(seq 1 2400); do
  entries=$(on node4 'find /tmp/stopped.ezpz-tmp-* 2>/dev/null | wc -l')
  [ "$entries" -ge 5000 ] && break
  sleep 0.1
done
[ "$entries" -ge 5000 ] || fail "Ctrl-C: node4 received $entries entries in 240 s, wanted 5000"
head_pid=$(pgrep -o -f -- "^$ezpz yeet $W/data --dst /tmp/stopped")  # -o: not a child between fork and exec
kill -INT "$head_pid"
wait "$pid"
rc=$?
left=$("$sim/pgrep.sh" -a "(__yeet-agent|__yeet-relay|__agent-stdio)|srun --overlap")
[ -z "$left" ] || fail "Ctrl-C: still running when ezpz returned: $left"
[ "$rc" -eq 130 ] || fail "Ctrl-C: exit $rc, wanted 130"
for n in $nodes; do on "$n" 'test ! -e /tmp/stopped' || fail "Ctrl-C left /tmp/stopped on $n"; done
no_staging "Ctrl-C"
wait_no_ezpz || fail "Ctrl-C: agents or relays left running"
rm -rf "$W/data/a-many"

# 10. Ctrl-C before any agent called back (srun waiting for resources, here a stand-in that
#     never starts them): the head stops waiting at once, the step is ended, exit 130.
mkdir -p "$D/slowsrun"
printf '#!/bin/sh\nexec sleep 300\n' > "$D/slowsrun/srun"
chmod +x "$D/slowsrun/srun"
"$X" "${common[@]}" salloc -N 4 env PATH="$D/slowsrun:$PATH" "$ezpz" yeet "$W/data" --dst /tmp/never \
  --transport launcher >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do "$sim/pgrep.sh" "^sleep 300$" >/dev/null && break; sleep 0.05; done
"$sim/pgrep.sh" "^sleep 300$" >/dev/null || fail "Ctrl-C before agents: the stand-in srun did not start in 30 s"
head_pid=$(pgrep -o -f -- "^$ezpz yeet $W/data --dst /tmp/never")
started=$SECONDS
kill -INT "$head_pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C before the agents: exit $rc, wanted 130"
[ $((SECONDS - started)) -le 15 ] || fail "Ctrl-C before the agents took $((SECONDS - started)) s (the wait is 60 s)"
"$sim/pgrep.sh" "^sleep 300$" >/dev/null && fail "Ctrl-C before the agents: the launcher step was left running"

bed_done "cluster yeet --transport launcher"

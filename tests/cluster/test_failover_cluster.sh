#!/usr/bin/env bash
# ezpz launch --spare-nodes on 5 simulated nodes under real Slurm (salloc) and MPICH mpiexec:
# a node whose processes are all SIGKILLed mid-run is evicted on evidence (its shims vanished
# first, the launcher says its tasks were killed) and the job completes on 4 nodes including the
# spare; a node ssh cannot reach at the start is named by ssh's words and swapped too; an
# application error on healthy nodes ends at once with no swap; with no spare left the
# failed node is named. Brings the test bed up and tears it down itself.
export EZSIM_DIR=/var/tmp/ezpz-ctest-failover EZSIM_PREFIX=ezpzo EZSIM_NET=10.250.27
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 5 --slurm --mpich
mkdir -p "$D/out"
cp "$src/tests/data/gloo_loop.py" "$src/tests/data/fail_signs.py" "$D/"
printf 'node%s\n' 1 2 3 4 5 >"$D/hostfile"
common=(env EZPZ_MACHINE=local EZPZ_HOME="$D/home" HOME="$D/home" PYTHONUNBUFFERED=1 STEPS=15)
py=/usr/bin/python3  # torch is there (a pyenv shim would add a bash per rank)

# node_pids NODE: the job's processes on NODE (its ranks' shims and the ranks).
node_pids() {
  local ns p
  ns=$(readlink "/proc/$(cat "$D/nodes/$1/launcher.pid")/ns/net")
  for p in $(pgrep -f -- "__rank-env|gloo_loop.py"); do
    [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$ns" ] && echo "$p"
  done
}
# signal_node SIG NODE: send SIG to every process of the job on NODE.
signal_node() {
  local pids
  pids=$(node_pids "$2")
  [ -n "$pids" ] && kill "-$1" $pids 2>/dev/null
}
# kill_node NODE: every process gone at once, as when a node dies: all are stopped first, so that no
# shim sees its rank die and reports it before its own SIGKILL lands (that is a rank killed by
# signal 9 on a live node: the application's failure, not the node's).
kill_node() {
  local pids
  pids=$(node_pids "$1")
  [ -n "$pids" ] || return 0
  kill -STOP $pids 2>/dev/null
  kill -KILL $pids 2>/dev/null
}
# kill_node_then_release NODE FILE: NODE dies while the ranks wait at step 3 (HOLD_FILE, FILE its
# attempt's file), then the others go on (into an all_reduce with a dead peer).
kill_node_then_release() {
  kill_node "$1"
  touch "$2"
}
stop_node() { signal_node STOP "$1"; }  # a hang: the others wait in all_reduce
# latest record's JSON
record() { ls -t "$D"/home/jobs/*/launch-*.json | head -1; }

link_down() { ip netns exec "$EZSIM_PREFIX-$1" ip link set eth0 down; }
# link_up NODE: its link back, and every neighbour's failed ARP entry for it forgotten; returns
# once the login node reaches its sshd (the next case must not start on a node still unreachable).
link_up() {
  local ns k
  ip netns exec "$EZSIM_PREFIX-$1" ip link set eth0 up
  for ns in $(ip netns list | awk '{print $1}' | grep "^$EZSIM_PREFIX-"); do
    ip netns exec "$ns" ip neigh flush all 2>/dev/null
  done
  for ((k = 0; k < 300; k++)); do
    "$X" timeout 2 bash -c "exec 3<>/dev/tcp/$1/22" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$1 unreachable after its link came back up"
}
# when_step OUT ATTEMPT CMD...: run CMD once attempt ATTEMPT's ranks are at step 3.
when_step() {
  local out=$1 attempt=$2 k
  shift 2
  for ((k = 0; k < 600; k++)); do
    if [ "$(grep -c "^start rank .* restart $attempt$" "$out")" -ge 4 ] && grep -q "^step 3 rank" <(sed -n "/restart $attempt\$/,\$p" "$out"); then
      "$@"
      return 0
    fi
    sleep 0.1
  done
  return 1
}
# check_hang WHAT OUT RC EVIDENCE: node3 evicted naming EVIDENCE, the job done on the spare.
check_hang() {
  local what=$1 out=$2 rc=$3 evidence=$4
  [ "$rc" -eq 0 ] || fail "$what: exit $rc, want 0: $(tail -30 "$out")"
  grep -q "node node3 evicted: .*node5 takes its place" "$out" || fail "$what: no swap line: $(grep ezpz: "$out")"
  grep "node node3 evicted" "$out" | grep -q "$evidence" || fail "$what: the evidence is not $evidence: $(grep evicted "$out")"
  [ "$(grep -c "^done rank ./4 host .* OK$" "$out")" -eq 4 ] || fail "$what: want 4 ranks done: $(tail -20 "$out")"
  grep -q "^  attempt 1 on node1,node2,node3,node4: bad_nodes ([0-9.]* s); node3 evicted (" "$out" ||
    fail "$what: no summary of the attempts: $(grep -A3 'ezpz: failover:' "$out")"
  python3 - "$(record)" <<'PY' || fail "$what: record $(record)"
import json, sys
a = json.load(open(sys.argv[1]))["failover"]["attempts"]
assert [x["verdict"] for x in a] == ["bad_nodes", "success"], a
assert [e["host"] for e in a[0]["evicted"]] == ["node3"] and a[0]["evicted"][0]["evidence"], a
PY
}

# check_swap WHAT OUT RC: exit 0, node3 evicted with evidence, node5 in its place, 4 OKs at the end.
check_swap() {
  local what=$1 out=$2 rc=$3
  [ "$rc" -eq 0 ] || fail "$what: exit $rc, want 0: $(tail -30 "$out")"
  grep -q "node node3 evicted: .*node5 takes its place (0 spares left)" "$out" ||
    fail "$what: no swap line for node3: $(grep ezpz: "$out")"
  [ "$(grep -c "^done rank ./4 host .* OK$" "$out")" -eq 4 ] || fail "$what: want 4 ranks done: $(tail -20 "$out")"
  grep "^done rank" "$out" | grep -q "host node5 OK" || fail "$what: the spare node5 ran no rank"
  # (a recovered attempt is a warning: "error:" is for the job's outcome alone)
  ! grep -q "^ezpz: error:" "$out" || fail "$what: an error for a recovered attempt: $(grep 'ezpz: error:' "$out")"
  grep -q "^ezpz: warning: attempt 1 failed: " "$out" || fail "$what: attempt 1's end not said: $(grep ezpz: "$out")"
  ! grep "^done rank" "$out" | grep -q "host node3 " || fail "$what: node3 still ran a rank"
  python3 - "$(record)" <<'PY' || fail "$what: record $(record)"
import json, sys
f = json.load(open(sys.argv[1]))["failover"]
a = f["attempts"]
assert [x["verdict"] for x in a] == ["bad_nodes", "success"], a
assert [e["host"] for e in a[0]["evicted"]] == ["node3"], a  # that node (not the first), and no other
assert any("ended without a word" in e for e in a[0]["evicted"][0]["evidence"]), a
assert "node5" in a[1]["hosts"] and "node3" not in a[1]["hosts"], a
assert open(f["bad_nodes_file"]).read().splitlines()[1].startswith("node3  # "), f
g = f["goodput"]  # the time in the attempt that succeeded, of the whole; the rest lost
assert 0 < g["share"] < 1 and abs(g["useful_s"] + g["lost_s"] - g["total_s"]) < 0.01, g
assert abs(g["useful_s"] - a[1]["seconds"]) < 0.01 and a[0]["seconds"] > 0, (g, a)
PY
  grep -q "^  goodput: [0-9]*% (.* s of .* s in the attempt that succeeded; .* s lost to failed attempts and restarts)$" \
    "$out" || fail "$what: no goodput line: $(grep -A4 'ezpz: failover:' "$out")"
}

# 1. srun in salloc: node3's processes SIGKILLed mid-run.
out="$D/out/srun.txt"
: >"$out"
"$X" "${common[@]}" HOLD_FILE="$D/out/srun.go" salloc -N 5 --ntasks-per-node=1 "$ezpz" launch -n 4 --ppn 1 \
  --spare-nodes 1 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 kill_node_then_release node3 "$D/out/srun.go.0" ||
  fail "srun: the job never reached step 3: $(tail -20 "$out")"
wait "$job"
check_swap "srun, node3 killed" "$out" $?

# 2. MPICH mpiexec over ssh with a hostfile: the same.
out="$D/out/mpich.txt"
: >"$out"
"$X" "${common[@]}" HOLD_FILE="$D/out/mpich.go" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec \
  --hostfile "$D/hostfile" -n 4 --ppn 1 --spare-nodes 1 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 kill_node_then_release node3 "$D/out/mpich.go.0" ||
  fail "mpiexec: the job never reached step 3: $(tail -20 "$out")"
wait "$job"
check_swap "mpiexec, node3 killed" "$out" $?

# 3. An application error on healthy nodes: no swap, the rank's own code and words, one attempt.
out=$("$X" "${common[@]}" FAIL_RANK=1 salloc -N 5 --ntasks-per-node=1 "$ezpz" launch -n 4 --ppn 1 --spare-nodes 1 \
  -- "$py" "$D/gloo_loop.py" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "application error: exit $rc, want 1: $out"
grep -q "evicted" <<<"$out" && fail "application error: a node was evicted: $out"
grep -q "the application failed, not a node" <<<"$out" || fail "application error: no verdict line: $out"
grep -q "^ezpz: error: job failed: rank 1 on node2 failed first" <<<"$out" || fail "application error: the outcome: $out"
grep -q "bad input at step 2" <<<"$out" || fail "application error: the rank's words are missing: $out"
[ "$(grep -c '^start rank 0 ' <<<"$out")" -eq 1 ] || fail "application error: more than one attempt: $out"

# 3b. A storage error (ENOSPC) on nodes that pass their probes: the same nodes again, no spare
#     used, no bad-nodes line; its own verdict.
out=$("$X" "${common[@]}" FAIL_MODE=storage COUNTER="$D/out/storage" salloc -N 5 --ntasks-per-node=1 "$ezpz" launch \
  -n 4 --ppn 1 --spare-nodes 1 -- "$py" "$D/fail_signs.py" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "storage: exit $rc, want 0: $out"
grep -q "storage: No space left on device on nodes that pass their probes: the same nodes again, no spare used (1 of 3)" \
  <<<"$out" || fail "storage: no retry in place: $out"
! grep -q "evicted" <<<"$out" || fail "storage: a node was evicted: $out"
[ "$(grep -c '^done rank ' <<<"$out")" -eq 4 ] || fail "storage: want 4 ranks done: $out"
python3 - "$(record)" <<'PY' || fail "storage: record $(record)"
import json, sys
f = json.load(open(sys.argv[1]))["failover"]
assert [x["verdict"] for x in f["attempts"]] == ["storage", "success"], f
assert f["attempts"][0]["hosts"] == f["attempts"][1]["hosts"] and f["bad_nodes_file"] == "", f
PY

# 3c. Every rank's start-up times out in the KVS: systemic, said with its lines and remedy; no
#     eviction, one attempt.
out=$("$X" "${common[@]}" FAIL_MODE=systemic COUNTER="$D/out/systemic" salloc -N 5 --ntasks-per-node=1 "$ezpz" launch \
  -n 4 --ppn 1 --spare-nodes 1 -- "$py" "$D/fail_signs.py" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "systemic: exit $rc, want 1: $out"
grep -q "systemic: no node is at fault; a spare cannot fix this: every rank failed with PMI/CCL KVS timeout" <<<"$out" ||
  fail "systemic: not named: $out"
grep -q "known remedy: .*PMI_MMAP_SYNC_WAIT_TIME" <<<"$out" || fail "systemic: no remedy: $out"
! grep -q "evicted" <<<"$out" || fail "systemic: a node was evicted: $out"
[ "$(grep -c '^start rank 0 ' <<<"$out")" -eq 1 ] || fail "systemic: more than one attempt: $out"

# 3d. Every rank ended with 0, then the launcher failed in its teardown (a stand-in srun that
#     exits 7 after the real one: PALS's teardown cannot run here): exit 0, a warning, no retry.
mkdir -p "$D/badsrun"
printf '#!/bin/sh
/usr/bin/srun "$@"
exit 7
' >"$D/badsrun/srun"
chmod +x "$D/badsrun/srun"
out=$("$X" "${common[@]}" PATH="$D/badsrun:$PATH" COUNTER="$D/out/teardown" salloc -N 5 --ntasks-per-node=1 "$ezpz" \
  launch -n 4 --ppn 1 --spare-nodes 1 -- "$py" "$D/fail_signs.py" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "teardown: exit $rc, want 0: $out"
grep -q "every rank ended with code 0, then srun exited with code 7 (in its teardown): the job succeeded" <<<"$out" ||
  fail "teardown: not said: $out"
[ "$(grep -c '^start rank 0 ' <<<"$out")" -eq 1 ] || fail "teardown: retried: $out"

# 3e. Slurm's --no-kill: ezpz submit --spare-nodes 1 writes it (and one node more, kept as a
#     spare by its launch): no warning; the same script without it: the warning with the fix; an
#     salloc (no script to read on this Slurm): a caution.
"$X" "${common[@]}" COUNTER="$D/out/nokill" "$ezpz" submit --scheduler slurm -N 4 --spare-nodes 1 -t 10 \
  -o "$D/out/nokill.sh" -- "$py" "$D/fail_signs.py" >/dev/null 2>&1 || fail "submit --spare-nodes: no script"
grep -q "^#SBATCH --nodes=5$" "$D/out/nokill.sh" && grep -q "^#SBATCH --no-kill$" "$D/out/nokill.sh" ||
  fail "submit --spare-nodes: $(cat "$D/out/nokill.sh")"
sed '/^#SBATCH --no-kill$/d' "$D/out/nokill.sh" >"$D/out/kills.sh"
for script in nokill kills; do
  (cd "$D/out" && "$X" "${common[@]}" COUNTER="$D/out/$script" sbatch -W -o "$D/out/$script.txt" "$D/out/$script.sh") \
    >/dev/null 2>&1 || fail "sbatch $script: $(tail -5 "$D/out/$script.txt")"
done
[ "$(grep -c '^done rank ' "$D/out/nokill.txt")" -eq 4 ] || fail "submit --spare-nodes: the job: $(cat "$D/out/nokill.txt")"
! grep -q "without --no-kill\|cannot tell" "$D/out/nokill.txt" || fail "submit --spare-nodes: warned: $(grep ezpz: "$D/out/nokill.txt")"
grep -q "this Slurm job was submitted without --no-kill: .*#SBATCH --no-kill" "$D/out/kills.txt" ||
  fail "no --no-kill: not said: $(grep ezpz: "$D/out/kills.txt")"
grep -q "cannot tell whether this allocation was made with --no-kill" <<<"$("$X" "${common[@]}" COUNTER="$D/out/salloc" \
  salloc -N 5 --ntasks-per-node=1 "$ezpz" launch -n 4 --ppn 1 --spare-nodes 1 -- "$py" "$D/fail_signs.py" 2>&1)" ||
  fail "salloc: no caution about --no-kill"

# 4. No spare left: node3 killed in the first attempt, then node5 (its replacement) in the second.
out="$D/out/nospare.txt"
: >"$out"
"$X" "${common[@]}" HOLD_FILE="$D/out/nospare.go" HOLD_ATTEMPTS=2 salloc -N 5 --ntasks-per-node=1 "$ezpz" launch -n 4 --ppn 1 \
  --spare-nodes 1 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 kill_node_then_release node3 "$D/out/nospare.go.0" &&
  when_step "$out" 1 kill_node_then_release node5 "$D/out/nospare.go.1" ||
  fail "no spare: the kills did not happen: $(tail -20 "$out")"
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "no spare: exit 0"
grep -q "no spare node left for 1 failed node: node5 (" "$out" || fail "no spare: node5 not named: $(grep ezpz: "$out")"

# 5. A hang: node3's processes SIGSTOPped; --idle-timeout stops the attempt, the shims' silence names it.
out="$D/out/stop.txt"
: >"$out"
"$X" "${common[@]}" salloc -N 5 --ntasks-per-node=1 "$ezpz" launch -n 4 --ppn 1 --spare-nodes 1 --idle-timeout 15 --kill-after 3 \
  -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 stop_node node3 || fail "SIGSTOP: the job never reached step 3: $(tail -20 "$out")"
wait "$job"
check_hang "node3 stopped" "$out" $? "said nothing for"
pkill -CONT -f -- "gloo_loop.py" 2>/dev/null

# 5b. The same hang under MPICH mpiexec.
out="$D/out/stop-mpich.txt"
: >"$out"
"$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" -n 4 \
  --ppn 1 --spare-nodes 1 --idle-timeout 15 --kill-after 3 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 stop_node node3 || fail "SIGSTOP (mpiexec): the job never reached step 3: $(tail -20 "$out")"
wait "$job"
check_hang "node3 stopped (mpiexec)" "$out" $? "said nothing for"
pkill -CONT -f -- "gloo_loop.py" 2>/dev/null

# 6. node3's link goes down mid-run: the probe cannot reach it.
out="$D/out/link.txt"
: >"$out"
# (--no-kill: without it Slurm revokes the whole allocation when a node fails.)
"$X" "${common[@]}" salloc -N 5 --ntasks-per-node=1 --no-kill "$ezpz" launch -n 4 --ppn 1 --spare-nodes 1 \
  --idle-timeout 15 --kill-after 3 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 link_down node3 || fail "link: the job never reached step 3: $(tail -20 "$out")"
wait "$job"
# The probe finds node3 silent ("no answer") while its neighbour entry lasts, and "No route to host"
# once the kernel's ARP for it has failed (timing): either is the probe's evidence of the link.
check_hang "node3's link down" "$out" $? "probe: \(no answer\|cannot connect to node3\)"
link_up node3

# 7. Ctrl-C during the backoff: nothing starts after it.
out="$D/out/int.txt"
: >"$out"
"$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" -n 4 \
  --ppn 1 --spare-nodes 1 --retry-delay 30 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 kill_node node3 || fail "Ctrl-C: the job never reached step 3"
for ((k = 0; k < 600; k++)); do grep -q "^ezpz: warning: attempt 2 on " "$out" && break; sleep 0.1; done
pkill -INT -f -- "^$ezpz launch --launcher mpiexec" || fail "Ctrl-C: no ezpz to interrupt"
wait "$job"
rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C in the backoff: exit $rc, want 130: $(tail -5 "$out")"
grep -q " restart 1$" "$out" && fail "Ctrl-C in the backoff: an attempt started after it"

# 8. Under MPICH mpiexec too: an application error (no swap), node3's link down (probe), no spare left.
mpich=(env PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" -n 4 --ppn 1
       --spare-nodes 1)
out=$("$X" "${common[@]}" FAIL_RANK=1 "${mpich[@]}" -- "$py" "$D/gloo_loop.py" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "application error (mpiexec): exit $rc, want 1: $out"
grep -q "evicted" <<<"$out" && fail "application error (mpiexec): a node was evicted: $out"
grep -q "bad input at step 2" <<<"$out" || fail "application error (mpiexec): the rank's words are missing: $out"
# 8a. Storage (retried in place) and systemic (named, no swap) under mpiexec too: Hydra ends the
#     job at a rank's failure unless the shims hold it, so the verdicts rest on the shims' reports.
out=$("$X" "${common[@]}" FAIL_MODE=storage COUNTER="$D/out/storage-mpich" "${mpich[@]}" -- "$py" "$D/fail_signs.py" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "storage (mpiexec): exit $rc, want 0: $out"
grep -q "storage: No space left on device on nodes that pass their probes: the same nodes again, no spare used (1 of 3)" \
  <<<"$out" || fail "storage (mpiexec): no retry in place: $out"
! grep -q "evicted" <<<"$out" || fail "storage (mpiexec): a node was evicted: $out"
[ "$(grep -c '^done rank ' <<<"$out")" -eq 4 ] || fail "storage (mpiexec): want 4 ranks done: $out"
out=$("$X" "${common[@]}" FAIL_MODE=systemic COUNTER="$D/out/systemic-mpich" "${mpich[@]}" -- "$py" "$D/fail_signs.py" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "systemic (mpiexec): exit $rc, want 1: $out"
grep -q "systemic: no node is at fault; a spare cannot fix this: every rank failed with PMI/CCL KVS timeout" <<<"$out" ||
  fail "systemic (mpiexec): not named: $out"
! grep -q "evicted" <<<"$out" || fail "systemic (mpiexec): a node was evicted: $out"
[ "$(grep -c '^start rank 0 ' <<<"$out")" -eq 1 ] || fail "systemic (mpiexec): more than one attempt: $out"
out="$D/out/link-mpich.txt"
: >"$out"
"$X" "${common[@]}" "${mpich[@]}" --idle-timeout 15 --kill-after 3 -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 link_down node3 || fail "link (mpiexec): the job never reached step 3: $(tail -20 "$out")"
wait "$job"
check_hang "node3's link down (mpiexec)" "$out" $? "node3"
link_up node3
# 8b. node3 unreachable from the start: mpiexec's ssh cannot reach it, and Hydra would wait for its
# proxy for ever; ezpz stops mpiexec at ssh's words, evicts node3 and runs on the spare.
out="$D/out/unreachable-mpich.txt"
link_down node3
"$X" "${common[@]}" "${mpich[@]}" -- "$py" "$D/gloo_loop.py" >"$out" 2>&1
rc=$?
link_up node3
[ "$rc" -eq 0 ] || fail "unreachable (mpiexec): exit $rc, want 0: $(tail -30 "$out")"
grep -q "mpiexec cannot reach node3: ssh: connect to host node3 port 22: " "$out" ||
  fail "unreachable (mpiexec): ssh's words not named: $(grep ezpz: "$out")"
grep -q "node node3 evicted: .*node5 takes its place (0 spares left)" "$out" ||
  fail "unreachable (mpiexec): no swap line: $(grep ezpz: "$out")"
[ "$(grep -c "^done rank ./4 host .* OK$" "$out")" -eq 4 ] || fail "unreachable (mpiexec): want 4 ranks done: $(tail -20 "$out")"
python3 - "$(record)" <<'PY' || fail "unreachable (mpiexec): record $(record)"
import json, sys
a = json.load(open(sys.argv[1]))["failover"]["attempts"]
assert [x["verdict"] for x in a] == ["bad_nodes", "success"], a
assert a[0]["evicted"][0]["host"] == "node3", a
assert any("ssh: connect to host node3" in e for e in a[0]["evicted"][0]["evidence"]), a
PY
out="$D/out/nospare-mpich.txt"
: >"$out"
"$X" "${common[@]}" "${mpich[@]}" -- "$py" "$D/gloo_loop.py" >"$out" 2>&1 &
job=$!
when_step "$out" 0 kill_node node3 && when_step "$out" 1 kill_node node5 ||
  fail "no spare (mpiexec): the kills did not happen: $(tail -20 "$out")"
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "no spare (mpiexec): exit 0"
grep -q "no spare node left for 1 failed node: node5 (" "$out" ||
  fail "no spare (mpiexec): node5 not named: $(grep ezpz: "$out")"

# Nothing of the job is left on any node.
sleep 0
left=$(pgrep -f -- "gloo_loop.py" | wc -l)
[ "$left" -eq 0 ] || fail "$left processes of the job are left: $(pgrep -af gloo_loop.py)"
if [ "$fails" -gt 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "failover cluster: all passed"

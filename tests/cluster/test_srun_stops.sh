#!/usr/bin/env bash
# How a launch stops on the simulated Slurm cluster (4 nodes, real slurmctld/slurmd), as users
# meet it on Frontier and Perlmutter, and under MPICH's mpiexec beside it:
#  1. one Ctrl-C: every rank gets SIGINT (KeyboardInterrupt) through its shim, never srun's status
#     request and a SIGKILL 10 s later; the same under MPICH (Hydra would SIGKILL them);
#  2. SIGTERM (walltime, scancel): one line says so, every rank gets SIGTERM (srun would SIGKILL
#     them), the record keeps the signal; --time-limit likewise;
#  3. a second Ctrl-C kills ranks that ignore the first at once;
#  4. ezpz kill on a node: the launch says that ezpz kill stopped it, not that a rank failed;
#  5. a node set DOWN in a --no-kill allocation: the step never starts, and after --start-timeout
#     ezpz names the node (Slurm's state and reason) and exits 255; a Ctrl-C before any rank
#     started says that none had; yeet names it and copies to the others;
#  6. a node whose processes are SIGSTOPped, --idle-timeout and no spares: its shims' silence names it;
#  7. --log-dir twice: each launch its own directory, `latest` the newest; a failure names its file.
# Brings the test bed up and tears it down itself.
export EZSIM_DIR=/var/tmp/ezpz-ctest-stops EZSIM_PREFIX=ezpzs EZSIM_NET=10.250.29
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 4 --slurm --mpich
mkdir -p "$D/out" "$D/data"
cp "$src/tests/data/stop_handler.py" "$D/"
printf 'node%s\n' 1 2 3 4 >"$D/hostfile"
common=(env EZPZ_MACHINE=local EZPZ_HOME="$D/home" HOME="$D/home" PYTHONUNBUFFERED=1)
rank_cmd=(/usr/bin/python3 "$D/stop_handler.py")
srun_job=("$X" "${common[@]}" salloc -N 4 --ntasks-per-node=1 "$ezpz" launch)
mpich_job=("$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile"
  -n 4 --ppn 1)
record() { ls -t "$D"/home/jobs/*/launch-*.json | head -1; }
left() { pgrep -f -- "stop_handler.py" >/dev/null; }

# start OUT CMD...: CMD in the background (its pid in $job), once its 4 ranks are ready.
start() {
  local out=$1 k
  shift
  : >"$out"
  "$@" >"$out" 2>&1 &
  job=$!
  for ((k = 0; k < 1200; k++)); do
    [ "$(grep -c '^ready ' "$out")" -ge 4 ] && return 0
    sleep 0.05
  done
  fail "the 4 ranks did not start: $(tail -5 "$out")"
  return 1
}
head_pid() { pgrep -o -f -- "^$ezpz launch .*stop_handler.py"; }
# stopped SIG OUT WANT_RC WHAT: send SIG to ezpz; it must end within 8 s with WANT_RC, no SIGKILL.
stopped() {
  local sig=$1 out=$2 want=$3 what=$4 pid started rc
  pid=$(head_pid)
  started=$SECONDS
  kill "-$sig" "$pid"
  wait "$job"
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $rc, wanted $want: $(tail -8 "$out")"
  [ $((SECONDS - started)) -le 8 ] || fail "$what: ezpz took $((SECONDS - started)) s to end"
  ! grep -q "sending SIGKILL" "$out" || fail "$what: a rank was SIGKILLed: $(grep ezpz: "$out")"
  for ((k = 0; k < 100; k++)); do left || break; sleep 0.05; done
  ! left || { fail "$what: ranks left: $(pgrep -af stop_handler.py)"; pkill -9 -f stop_handler.py; }
}
# each_rank OUT TEXT WHAT: every rank printed "rank R TEXT".
each_rank() {
  local r
  for r in 0 1 2 3; do
    grep -q "^rank $r $2$" "$1" || fail "$3: rank $r did not print '$2': $(tail -12 "$1")"
  done
}

# 1. One Ctrl-C under srun, and under MPICH's Hydra.
out="$D/out/int.txt"
start "$out" "${srun_job[@]}" -- "${rank_cmd[@]}" && stopped INT "$out" 130 "Ctrl-C under srun"
each_rank "$out" KeyboardInterrupt "Ctrl-C under srun"
grep -q "SIGINT sent to 4 ranks: waiting up to 10 s for them to stop" "$out" || fail "Ctrl-C: the notice: $(cat "$out")"
! grep -q "interrupt (one more within 1 sec to abort)" "$out" || fail "Ctrl-C: srun got a status request"
out="$D/out/int-mpich.txt"
start "$out" "${mpich_job[@]}" -- "${rank_cmd[@]}" && stopped INT "$out" 130 "Ctrl-C under MPICH"
each_rank "$out" KeyboardInterrupt "Ctrl-C under MPICH"

# 2. SIGTERM (walltime, scancel): said, and every rank gets it; the record keeps it. --time-limit too.
out="$D/out/term.txt"
start "$out" "${srun_job[@]}" -- "${rank_cmd[@]}" && stopped TERM "$out" 143 "SIGTERM under srun"
each_rank "$out" "got SIGTERM" "SIGTERM under srun"
grep -q "SIGTERM received (walltime or scancel?): sent to 4 ranks, SIGKILL in 10 s" "$out" ||
  fail "SIGTERM: no line says it: $(grep ezpz: "$out")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["signal"] == 15, r["signal"]' "$(record)" ||
  fail "SIGTERM: the record does not keep it"
out="$D/out/limit.txt"
"${srun_job[@]}" --time-limit 4 -- "${rank_cmd[@]}" >"$out" 2>&1
rc=$?
[ "$rc" -eq 124 ] || fail "--time-limit under srun: exit $rc"
each_rank "$out" "got SIGTERM" "--time-limit under srun"

# 3. A second Ctrl-C kills ranks that ignore SIGINT, at once.
out="$D/out/int2.txt"
if start "$out" env IGNORE_INT=1 "${srun_job[@]}" -- "${rank_cmd[@]}"; then
  pid=$(head_pid)
  started=$SECONDS
  kill -INT "$pid"
  for ((k = 0; k < 100; k++)); do grep -q "SIGINT sent to" "$out" && break; sleep 0.05; done
  kill -INT "$pid"
  wait "$job"
  [ $((SECONDS - started)) -le 6 ] || fail "second Ctrl-C: ezpz took $((SECONDS - started)) s"
  grep -q "second interrupt: killing the job" "$out" || fail "second Ctrl-C: $(grep ezpz: "$out")"
  for ((k = 0; k < 100; k++)); do left || break; sleep 0.05; done
  ! left || { fail "second Ctrl-C: ranks left"; pkill -9 -f stop_handler.py; }
fi

# 4. ezpz kill on node3 stops its rank; the launch says ezpz kill did it.
out="$D/out/kill.txt"
if start "$out" "${srun_job[@]}" -- "${rank_cmd[@]}"; then
  "$X" -n node3 "${common[@]}" "$ezpz" kill stop_handler >"$D/out/kill-cmd.txt" 2>&1 || fail "ezpz kill: $(cat "$D/out/kill-cmd.txt")"
  wait "$job"
  grep -q "rank 2 on node3 got SIGTERM" "$out" || true
  grep -q "job failed: stopped by ezpz kill: rank 2 on node3 got SIGTERM first" "$out" ||
    fail "ezpz kill: the summary: $(grep ezpz: "$out")"
  ! grep -q "failed first" "$out" || fail "ezpz kill: reported as a failure: $(grep ezpz: "$out")"
fi

# 5. node4 DOWN in a --no-kill allocation: named after --start-timeout (not a silent wait), exit
#    255; a Ctrl-C before any rank started says so; yeet names it and copies to the other nodes.
cat >"$D/down.sh" <<EOF
#!/bin/bash
scontrol update NodeName=node4 State=DOWN Reason=ezpz-test
started=\$(date +%s.%N)
"$ezpz" launch --start-timeout 5 -- ${rank_cmd[*]} >$D/out/down.txt 2>&1
echo "rc=\$? seconds=\$(echo "\$(date +%s.%N) - \$started" | bc)" >>$D/out/down.txt
"$ezpz" launch -- ${rank_cmd[*]} >$D/out/down-int.txt 2>&1 &
for k in \$(seq 1 200); do pgrep -f "^srun .*stop_handler" >/dev/null && break; sleep 0.05; done
sleep 1
kill -INT \$!
wait \$!
echo "rc=\$?" >>$D/out/down-int.txt
echo data >$D/data/file
"$ezpz" yeet $D/data --dst /tmp/yeet-down >$D/out/down-yeet.txt 2>&1
echo "rc=\$?" >>$D/out/down-yeet.txt
scontrol update NodeName=node4 State=RESUME
EOF
chmod +x "$D/down.sh"
timeout 120 "$X" "${common[@]}" salloc -N 4 --ntasks-per-node=1 --no-kill "$D/down.sh" >"$D/out/down-salloc.txt" 2>&1
out="$D/out/down.txt"
grep -q "no rank of 4 ranks has started 5 s after srun began" "$out" || fail "node down: $(cat "$out")"
grep -q "^ezpz: warning:   node4: down (ezpz-test)" "$out" || fail "node down: node4 not named: $(cat "$out")"
python3 - "$(tail -1 "$out")" <<'PY' || fail "node down: $(tail -1 "$out")"
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split())
assert f["rc"] == "255", f
assert float(f["seconds"]) < 5 + 4, f  # the timeout, plus under 2 s (4 under asan)
PY
grep -q "SIGINT received before any rank started" "$D/out/down-int.txt" || fail "node down, Ctrl-C: $(cat "$D/out/down-int.txt")"
grep -q "^rc=130$" "$D/out/down-int.txt" || fail "node down, Ctrl-C: $(tail -1 "$D/out/down-int.txt")"
! grep -q "still running" "$D/out/down-int.txt" || fail "node down, Ctrl-C: ranks said running"
out="$D/out/down-yeet.txt"
grep -q "node4 is down (the scheduler says down: ezpz-test): left out" "$out" || fail "yeet, node down: $(cat "$out")"
grep -q "^    x  node4: down (the scheduler says down: ezpz-test): left out$" "$out" || fail "yeet, node down: node4: $(cat "$out")"
grep -q "The copy is in /tmp/yeet-down/ on 4 of 5 nodes; missing on node4." "$out" || fail "yeet, node down: $(cat "$out")"
! grep -q "can every node run" "$out" || fail "yeet, node down: the wrong hint: $(cat "$out")"
grep -q "^rc=1$" "$out" || fail "yeet, node down: $(tail -1 "$out")"
for n in node1 node2 node3; do
  "$X" -n "$n" cat /tmp/yeet-down/file 2>/dev/null | grep -q data || fail "yeet, node down: no copy on $n"
done

# 6. A hang without spares: node2's processes SIGSTOPped, --idle-timeout names node2 by its shims.
out="$D/out/hang.txt"
if start "$out" "${srun_job[@]}" --idle-timeout 12 --kill-after 2 -- "${rank_cmd[@]}"; then
  ns=$(readlink "/proc/$(cat "$D/nodes/node2/launcher.pid")/ns/net")
  for p in $(pgrep -f -- "__rank-env|stop_handler.py"); do
    [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$ns" ] && kill -STOP "$p"
  done
  wait "$job"
  grep -q "node2: its rank's ezpz shim said nothing for" "$out" || fail "hang: node2 not named: $(grep ezpz: "$out")"
  pkill -CONT -f -- "stop_handler.py|__rank-env" 2>/dev/null
  pkill -9 -f stop_handler.py 2>/dev/null
fi

# 7. --log-dir twice: two directories, `latest` the second; a failure's summary names its file.
for k in 1 2; do
  "${srun_job[@]}" --log-dir "$D/logs" -- sh -c "echo run $k; sleep 1; test \$RANK != 1 || exit 3" >"$D/out/logs-$k.txt" 2>&1
done
runs=$(find "$D/logs" -mindepth 1 -maxdepth 1 -type d -name 'launch-*' | wc -l)
[ "$runs" -eq 2 ] || fail "--log-dir twice: $runs launch directories: $(ls "$D/logs")"
latest=$(readlink "$D/logs/latest")
grep -q "^run 2$" "$D/logs/$latest/rank-0.node1.out" 2>/dev/null || fail "--log-dir: latest is not the second run"
grep -q "^  full output: $D/logs/$latest/rank-1.node2.err$" "$D/out/logs-2.txt" ||
  fail "--log-dir: the summary does not name the file: $(grep -A9 'job failed' "$D/out/logs-2.txt")"
first=$(find "$D/logs" -mindepth 1 -maxdepth 1 -type d -name 'launch-*' ! -name "$latest")
grep -q "^run 1$" "$first/rank-0.node1.out" 2>/dev/null || fail "--log-dir: the first run's output was overwritten"

bed_done "srun stops"

#!/usr/bin/env bash
# ezpz launch across simulated nodes (scripts/cluster-sim): Open MPI and MPICH over ssh with
# a hostfile, a PBS-like job with MPICH standing in for PALS, and real Slurm (salloc, sbatch;
# nodes with 8 counted GPUs each).
# Brings the test bed up and tears it down itself; fails loudly when namespaces are not allowed.
export EZSIM_DIR=/var/tmp/ezpz-ctest-launch EZSIM_PREFIX=ezpzl EZSIM_NET=10.250.21
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 3 --slurm --gpus 8 --mpich
# Data the nodes use must live outside /tmp (private per node).
cp "$src/tests/data/gloo_allreduce.py" "$D/"
# The login node is called "login", which ezpz's rules take for Perlmutter: say what it is.
common=(env EZPZ_MACHINE=local EZPZ_HOME="$D/home" HOME="$D/home")
SHOW='echo "host=$(hostname) rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK node=$NODE_RANK addr=$MASTER_ADDR port=$MASTER_PORT"'

# expect_layout OUTPUT NRANKS PPN: rank r on node(r/PPN + 1) with local rank r%PPN, one port.
expect_layout() {
  local out=$1 n=$2 ppn=$3 what=$4 r line
  for ((r = 0; r < n; r++)); do
    line=$(grep -E "rank=$r world=$n " <<<"$out")
    [ -n "$line" ] || { fail "$what: no line for rank $r in: $out"; return; }
    grep -q "host=node$((r / ppn + 1)) " <<<"$line" || fail "$what: rank $r on the wrong host: $line"
    grep -q "local=$((r % ppn)) node=$((r / ppn)) addr=node1 " <<<"$line" || fail "$what: rank $r env: $line"
  done
  [ "$(grep -o 'port=[0-9]*' <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "$what: ranks disagree on MASTER_PORT"
}

out=$("$X" "${common[@]}" "$ezpz" launch --launcher mpirun --hostfile "$D/hostfile" -n 6 -- sh -c "$SHOW" 2>&1)
expect_layout "$out" 6 2 "Open MPI over ssh"

out=$("$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" \
      -n 6 -- sh -c "$SHOW" 2>&1)
expect_layout "$out" 6 2 "MPICH over ssh"

# PBS-like: the job's variables and nodefile, mpiexec = MPICH (standing in for PALS).
pbs=(env PBS_JOBID=4242.pbs PBS_NODEFILE="$D/hostfile" NGPU_PER_HOST=2 PATH="$D/mpich/bin:$PATH")
plan=$("$X" "${common[@]}" "${pbs[@]}" "$ezpz" launch --dry-run --json -- true)
python3 - "$plan" <<'PY' || fail "PBS plan: $plan"
import json, sys
p = json.loads(sys.argv[1])
assert (p["scheduler"], p["launcher"], p["style"], p["nprocs"], p["ppn"]) == ("pbs", "mpiexec", "mpich", 6, 2), p
assert p["hosts"] == ["node1", "node2", "node3"], p
PY
out=$("$X" "${common[@]}" "${pbs[@]}" "$ezpz" launch -- sh -c "$SHOW" 2>&1)
expect_layout "$out" 6 2 "PBS job with MPICH"
ls "$D/home/jobs/4242/"launch-*.json >/dev/null 2>&1 || fail "PBS job: no record under jobs/4242"

# Slurm: salloc runs ezpz on the login node, srun starts the ranks on the allocated nodes.
plan=$("$X" "${common[@]}" salloc -N 2 "$ezpz" launch --dry-run --json -- true 2>/dev/null)
python3 - "$plan" <<'PY' || fail "salloc plan: $plan"
import json, sys
p = json.loads(sys.argv[1])
assert p["scheduler"] == "slurm" and p["launcher"] == "srun", p
# (the job has one CPU a node, so no -c: srun's default)
assert p["argv"][:4] == ["srun", "-N2", "-n2", p["argv"][3]] and p["argv"][4] == "__rank-env", p["argv"]
assert p["hosts"] == ["node1", "node2"], p
PY
out=$("$X" "${common[@]}" salloc -N 2 "$ezpz" launch -- sh -c "$SHOW" 2>/dev/null)
expect_layout "$out" 2 1 "salloc -N 2"
# Whole nodes (--exclusive, as HPC jobs get them): each rank gets its node's 2 CPUs, not srun's
# default of one (srun sets SLURM_CPUS_PER_TASK in the step's tasks).
out=$("$X" "${common[@]}" salloc -N 2 --exclusive "$ezpz" launch -- sh -c 'echo "cpus=$SLURM_CPUS_PER_TASK"' \
      2>/dev/null)
[ "$(echo "$out" | grep -c '^cpus=2$')" -eq 2 ] || fail "salloc -N 2 --exclusive: each rank should get 2 CPUs: $out"
# No GPUs: the job's --ntasks-per-node decides (2 a node), not the default of one GPU.
out=$("$X" "${common[@]}" salloc -N 2 --ntasks-per-node=2 "$ezpz" launch -- sh -c "$SHOW" 2>/dev/null)
expect_layout "$out" 4 2 "salloc -N 2 --ntasks-per-node=2"

cat > "$D/job.sh" <<JOB
#!/bin/sh
exec "$ezpz" launch --ppn 2 -- sh -c '$SHOW'
JOB
"$X" "${common[@]}" sbatch --wait -N 3 --ntasks-per-node=2 --output="$D/job.out" "$D/job.sh" >/dev/null || fail "sbatch job failed: $(cat "$D/job.out")"
expect_layout "$(cat "$D/job.out")" 6 2 "sbatch -N 3"

# ezpz submit --yeet: the script copies the active venv to each node's /tmp (ezpz yeet over the
# job's own srun), activates that copy and runs from it.
/usr/bin/python3 -m venv --without-pip "$D/proj/venv" || fail "python3 -m venv"
"$X" "${common[@]}" VIRTUAL_ENV="$D/proj/venv" PWD="$D" "$ezpz" submit --scheduler slurm -N 2 -t 5 --yeet \
  --launch-arg=--ppn=1 -o "$D/yeet.sh" -- python3 -c 'import os, sys; print("prefix", os.uname().nodename, sys.prefix)' \
  >/dev/null || fail "submit --yeet: no script"
"$X" "${common[@]}" sbatch --wait --output="$D/yeet.out" "$D/yeet.sh" >/dev/null || fail "submit --yeet job: $(cat "$D/yeet.out")"
copy=$("$X" "${common[@]}" VIRTUAL_ENV="$D/proj/venv" PWD="$D" "$ezpz" yeet --where)  # /tmp/<user>/venv-<hash>
for n in node1 node2; do
  grep -q "^prefix $n $copy$" "$D/yeet.out" || fail "submit --yeet: $n did not run from $copy: $(cat "$D/yeet.out")"
done

# Allocations made with --ntasks-per-node=1 and 4 of each node's 8 GPUs, on a machine whose
# profile says 8 GPUs per node: 3 ranks, one per node, each with one GPU (-n24 is what the
# profile alone gives, and srun refuses it: "More processors requested than permitted").
cat > "$D/gpusim.toml" <<'TOML'
[[machine]]
name = "gpusim"
match_prefix = ["gpusim"]
scheduler = "slurm"
launcher = "srun"
style = "srun"
gpus_per_node = 8
TOML
gpusim=(env EZPZ_MACHINE=gpusim EZPZ_CONFIG="$D/gpusim.toml" EZPZ_HOME="$D/home" HOME="$D/home")
alloc=(-N 3 --ntasks-per-node=1 --gpus-per-node=4)
plan=$("$X" "${gpusim[@]}" salloc "${alloc[@]}" "$ezpz" launch --dry-run --json -- true 2>/dev/null)
python3 - "$plan" <<'PY' || fail "salloc --ntasks-per-node=1 plan: $plan"
import json, sys
p = json.loads(sys.argv[1])
assert p["argv"][:4] == ["srun", "-N3", "-n3", "--gpus-per-node=1"], p["argv"]
assert (p["gpus_per_node"], p["gpus_source"]) == (4, "SLURM_GPUS_PER_NODE"), p
assert (p["ppn_limit"], p["ppn_limit_source"]) == (1, "SLURM_NTASKS_PER_NODE"), p
assert p["warnings"] == [], p["warnings"]
PY
out=$("$X" "${gpusim[@]}" salloc "${alloc[@]}" "$ezpz" launch -- sh -c "$SHOW" 2>&1)
expect_layout "$out" 3 1 "salloc --ntasks-per-node=1"
cat > "$D/job1.sh" <<JOB
#!/bin/sh
exec "$ezpz" launch -- sh -c '$SHOW'
JOB
"$X" "${gpusim[@]}" sbatch --wait "${alloc[@]}" --output="$D/job1.out" "$D/job1.sh" >/dev/null ||
  fail "sbatch --ntasks-per-node=1 job failed: $(cat "$D/job1.out")"
expect_layout "$(cat "$D/job1.out")" 3 1 "sbatch --ntasks-per-node=1"
# Asking for more per node than the job has CPUs for: one line naming the fix, before srun runs.
err=$("$X" "${gpusim[@]}" salloc "${alloc[@]}" "$ezpz" launch --ppn 8 -- true 2>&1 >/dev/null)
grep -q -- "--ppn 8 is more than the .* per node srun starts in this job" <<<"$err" || fail "--ppn 8: $err"

# torchrun's whole contract and the failure summary across 3 nodes under srun (salloc and sbatch
# allocations made with --ntasks-per-node=1), with Debian's torch on every rank.
cat > "$D/contract.py" <<'PY'
import os, socket, torch.distributed as dist
e = os.environ
print(f"contract rank={e['RANK']} host={socket.gethostname()} elastic={dist.is_torchelastic_launched()} "
      f"group={e['GROUP_RANK']}/{e['GROUP_WORLD_SIZE']} role={e['ROLE_NAME']}:{e['ROLE_RANK']}/{e['ROLE_WORLD_SIZE']} "
      f"run={e['TORCHELASTIC_RUN_ID']} restart={e['TORCHELASTIC_RESTART_COUNT']}/{e['TORCHELASTIC_MAX_RESTARTS']} "
      f"store={e['TORCHELASTIC_USE_AGENT_STORE']} nccl={e['TORCH_NCCL_ASYNC_ERROR_HANDLING']} "
      f"errfile={os.path.basename(e['TORCHELASTIC_ERROR_FILE'])}", flush=True)
PY
cat > "$D/raise.py" <<'PY'
import os, time
from torch.distributed.elastic.multiprocessing.errors import record
def load_shard():
    raise RuntimeError("shard missing on " + os.environ["RANK"])
@record
def main():
    if os.environ["RANK"] == "1":
        load_shard()
    time.sleep(3)
main()
PY
expect_contract() {
  local out=$1 what=$2 r
  for r in 0 1 2; do
    # (srun -u passes each rank's bytes on as they come: a line may run into another rank's)
    grep -qE "contract rank=$r host=node$((r + 1)) elastic=True group=$r/3 role=default:$r/3 run=[0-9]+ restart=0/1 store=False nccl=1 errfile=error-$r.json" <<<"$out" ||
      fail "$what: rank $r's torchrun variables: $out"
  done
}
out=$("$X" "${common[@]}" salloc -N 3 --ntasks-per-node=1 "$ezpz" launch --retries 1 -- /usr/bin/python3 "$D/contract.py" 2>&1)
expect_contract "$out" "salloc --ntasks-per-node=1"
cat > "$D/job2.sh" <<JOB
#!/bin/sh
"$ezpz" launch --retries 1 -- /usr/bin/python3 "$D/contract.py"
"$ezpz" launch -- /usr/bin/python3 "$D/raise.py"
JOB
"$X" "${common[@]}" sbatch --wait -N 3 --ntasks-per-node=1 --output="$D/job2.out" "$D/job2.sh" >/dev/null
expect_contract "$(cat "$D/job2.out")" "sbatch --ntasks-per-node=1"
summary=$(grep -A3 '^ezpz: error: job failed:' "$D/job2.out")
grep -q "^ezpz: error: job failed: rank 1 on node2 failed first: it exited with code 1, " <<<"$summary" ||
  fail "sbatch: the failure summary should name rank 1 on node2: $(cat "$D/job2.out")"
grep -qx "  RuntimeError: shard missing on 1" <<<"$summary" || fail "sbatch: the summary should show the exception: $summary"
[ "$(grep -c '^ezpz: error: job failed:' "$D/job2.out")" -eq 1 ] || fail "sbatch: one summary, not $(cat "$D/job2.out")"
out=$("$X" "${common[@]}" salloc -N 3 --ntasks-per-node=1 "$ezpz" launch -- no-such-program-xyz 2>&1)
[ "$(grep -c 'no-such-program-xyz: command not found' <<<"$out")" -eq 1 ] ||
  fail "salloc: a missing command should be said once: $out"
grep -q "was not found on 3 ranks" <<<"$out" || fail "salloc: how many ranks lacked the command: $out"

# A real torch.distributed job across two nodes: gloo over the simulated network.
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  out=$("$X" "${common[@]}" "$ezpz" launch --launcher mpirun --hostfile "$D/hostfile" -n 4 --ppn 2 -- \
        /usr/bin/python3 "$D/gloo_allreduce.py" 2>&1)
  [ "$(grep -c ' OK' <<<"$out")" -eq 4 ] || fail "gloo across nodes: $out"
  # ezpz test's Python engine on two Slurm nodes (srun), the script and outputs in a shared directory.
  out=$("$X" "${common[@]}" salloc -N 2 --ntasks-per-node=2 "$ezpz" test --python /usr/bin/python3 \
        --train-iters 20 --outdir "$D/ezpz-test" --json 2>"$D/test.err")
  python3 - "$out" <<'PY' || fail "ezpz test under srun: $out $(tail -20 "$D/test.err")"
import json, sys
r = json.loads(sys.argv[1])
assert r["engine"] == "python" and r["world_size"] == 4, r
assert [x["groups"]["dp"] for x in r["ranks"]] == [[0, 1, 2, 3]] * 4, r
for x in r["ranks"]:
    assert sum(x["loss"][-5:]) < sum(x["loss"][:5]), x
PY
else
  fail "Debian's python3-torch is missing: run scripts/install-deps.sh"
fi

# ezpz kill --all-nodes: a job's ranks on every node (found by EZPZ_JOB_ID), stopped from the
# login node over ssh; the launch then ends.
"$X" "${common[@]}" "$ezpz" launch --launcher mpirun --hostfile "$D/hostfile" -n 6 -- sleep 303 >/dev/null 2>&1 &
job=$!
# (the simulated nodes share one kernel: pgrep.sh here sees every node's ranks, and only theirs)
for _ in $(seq 1 1200); do [ "$("$sim/pgrep.sh" -c '^sleep 303')" = 6 ] && break; sleep 0.05; done
[ "$("$sim/pgrep.sh" -c '^sleep 303')" = 6 ] || fail "the 6 ranks of the job to kill did not start in 60 s"
out=$("$X" "${common[@]}" "$ezpz" kill --all-nodes --hostfile "$D/hostfile" --dry-run --json "sleep 303" 2>&1)
[ "$(grep -o '"pid"' <<<"$out" | wc -l)" -eq 6 ] || fail "kill --dry-run --all-nodes should list 6 ranks: $out"
[ "$(grep -c '"host":"node' <<<"$out")" -eq 3 ] || fail "kill --dry-run --all-nodes should report 3 nodes: $out"
out=$("$X" "${common[@]}" "$ezpz" kill --all-nodes --hostfile "$D/hostfile" "sleep 303" 2>&1) || fail "kill --all-nodes: $out"
# The nodes are reached at once; the first ranks stopped are failures the launch stops the job
# for, through the shims of the rest, which can beat the kill to a node: each of the 6 ranks is
# stopped by one or the other (the dry run above found all 6 on their 3 nodes).
sent=$(grep -c 'sent SIGTERM' <<<"$out")
[ "$sent" -ge 1 ] && [ "$sent" -le 6 ] || fail "kill --all-nodes should stop the job's ranks: $out"
for _ in $(seq 1 1200); do kill -0 "$job" 2>/dev/null || break; sleep 0.05; done
kill -0 "$job" 2>/dev/null && { fail "the launch did not end in 60 s after ezpz kill"; kill -9 "$job"; }
[ "$("$sim/pgrep.sh" -c '^sleep 303')" = 0 ] || fail "sleep 303 still runs: $("$sim/pgrep.sh" -a '^sleep 303')"

# The ranks' output across nodes (the rank hub): whole lines labelled with their hosts under srun
# and MPICH over ssh, stderr apart, per-rank files on the shared home, a failing rank's last
# words, and no rank left on any node after ezpz stops the job or dies.
cat > "$D/lines.py" <<'PY'
import os, socket, sys
r = os.environ["RANK"]
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for i in range(n):
    print(f"WF rank={r} i={i} host={socket.gethostname()} " + "x" * 150)
print(f"E rank={r}", file=sys.stderr)
PY
# check_lines OUT NRANKS NLINES WHAT: every line whole, each rank's all there, labels name hosts.
check_lines() {
  python3 - "$1" "$2" "$3" <<'PY' || fail "$4: lines cut, glued or missing"
import collections, re, sys
out, n, k = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
pat = re.compile(r"^\[(node\d) (\d+)\] WF rank=(\d+) i=(\d+) host=(node\d) x{150}$")
per, bad = collections.Counter(), []
for line in out.splitlines():
    m = pat.match(line)
    if not m or m.group(1) != m.group(5) or m.group(2) != m.group(3):
        bad.append(line[:200])
        continue
    per[int(m.group(3))] += 1
ok = not bad and sorted(per) == list(range(n)) and set(per.values()) == {k}
if not ok:
    print(f"bad lines {len(bad)}: {bad[:3]}; per rank: {dict(per)}")
sys.exit(0 if ok else 1)
PY
}
cat > "$D/job3.sh" <<JOB
#!/bin/sh
export PYTHONUNBUFFERED=1
"$ezpz" launch --ppn 2 --label -- /usr/bin/python3 "$D/lines.py" 1 > "$D/job3.lines" 2> "$D/job3.err"
"$ezpz" launch -n 2 --ppn 1 --label -- /usr/bin/python3 "$D/lines.py" 100000 > "$D/job3.many" 2>/dev/null
JOB
timeout 300 "$X" "${common[@]}" sbatch --wait -N 3 --ntasks-per-node=2 --output="$D/job3.out" "$D/job3.sh" >/dev/null ||
  fail "sbatch lines job failed: $(cat "$D/job3.out" "$D/job3.err")"
check_lines "$D/job3.lines" 6 1 "sbatch -N 3, 6 ranks, one line each"
check_lines "$D/job3.many" 2 100000 "sbatch -N 3, 2 ranks of 100,000 lines on 2 nodes"
[ "$(grep -c '^\[node[123] [0-5]\] E rank=[0-5]$' "$D/job3.err")" -eq 6 ] || fail "stderr of the 6 ranks: $(cat "$D/job3.err")"
grep -q 'WF rank' "$D/job3.err" && fail "stdout lines on stderr: $(cat "$D/job3.err")"
files=$(ls "$D"/home/jobs/*/launch-*/rank-*.node[123].out 2>/dev/null | wc -l)
[ "$files" -ge 8 ] || fail "per-rank files of the sbatch jobs (6 + 2 expected): $files"
mpich_out=$("$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" PYTHONUNBUFFERED=1 "$ezpz" launch --launcher mpiexec \
  --hostfile "$D/hostfile" -n 6 --label -- /usr/bin/python3 "$D/lines.py" 2000 2>/dev/null)
check_lines <(echo "$mpich_out") 6 2000 "MPICH over ssh, 6 ranks on 3 nodes"

# Last words: a missing module on rank 1 (node2) under srun, without @record.
out=$("$X" "${common[@]}" salloc -N 3 --ntasks-per-node=1 "$ezpz" launch -- /usr/bin/python3 -c \
  'import os, time; os.environ["RANK"] == "1" and __import__("no_such_module_xyz"); time.sleep(5)' 2>&1)
grep -q "^ezpz: error: job failed: rank 1 on node2 failed first" <<<"$out" || fail "srun last words: $out"
grep -q "^  \[node2 1\] ModuleNotFoundError: No module named 'no_such_module_xyz'" <<<"$out" ||
  fail "srun: the summary should end with rank 1's last line: $out"

# No orphans: ranks that ignore SIGINT and SIGTERM, stopped by --time-limit, and by SIGKILL of ezpz.
marker="stubborn$RANDOM$RANDOM"
cat > "$D/$marker.py" <<'PY'
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
while True:
    time.sleep(0.1)
PY
# (the simulated nodes share one kernel: pgrep here sees every node's ranks and shims)
left() { pgrep -f "^/usr/bin/python3 $D/$marker.py|__rank-env .*$marker" >/dev/null; }
gone_within() {  # gone_within SECONDS WHAT: no rank of the marker and no shim left on any node
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt "$end" ] && left; do sleep 0.1; done
  left && { fail "$2: ranks left behind: $(pgrep -af "$marker")"; pkill -9 -f "$marker"; }
}
"$X" "${common[@]}" salloc -N 3 --ntasks-per-node=1 "$ezpz" launch --time-limit 3 --kill-after 2 -- \
  /usr/bin/python3 "$D/$marker.py" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 124 ] || fail "--time-limit under srun: exit $rc, not 124"
gone_within 4 "--time-limit 3 --kill-after 2 under srun"
for launcher in srun mpiexec; do
  if [ "$launcher" = srun ]; then
    "$X" "${common[@]}" salloc -N 3 --ntasks-per-node=1 "$ezpz" launch --kill-after 2 -- \
      /usr/bin/python3 "$D/$marker.py" >"$D/stub.out" 2>&1 &
  else
    "$X" "${common[@]}" PATH="$D/mpich/bin:$PATH" "$ezpz" launch --launcher mpiexec --hostfile "$D/hostfile" -n 3 \
      --kill-after 2 -- /usr/bin/python3 "$D/$marker.py" >"$D/stub.out" 2>&1 &
  fi
  for _ in $(seq 1 1200); do [ "$(grep -c ready "$D/stub.out")" = 3 ] && break; sleep 0.05; done
  [ "$(grep -c ready "$D/stub.out")" = 3 ] || fail "$launcher: the 3 stubborn ranks did not start: $(cat "$D/stub.out")"
  pid=$(pgrep -f "^$ezpz launch .*$marker")
  kill -9 "$pid"
  gone_within 4 "SIGKILL of ezpz under $launcher"
  wait
done

bed_done "cluster launch"

#!/usr/bin/env bash
# How fast a launch under srun stops, NEW against OLD (the anchor) and bare srun, in one run on
# the simulated Slurm cluster (4 nodes, real slurmctld/slurmd), each rank a Python process that
# handles SIGINT (KeyboardInterrupt) and SIGTERM (tests/data/stop_handler.py):
#   Ctrl-C to exit: bare srun given its double SIGINT (its abort: SIGINT, then SIGKILL at once),
#     `ezpz launch` given one SIGINT; and whether the ranks saw it (their KeyboardInterrupt lines);
#   a node set DOWN in a --no-kill allocation: the launch's start to its exit (--start-timeout 5;
#     OLD has no such flag: it waits, cut at CUT s).
# Medians of RUNS. Needs root. Usage: scripts/bench/srun_stops.sh NEW_EZPZ OLD_EZPZ   (RUNS=3 CUT=20)
set -euo pipefail
cd "$(dirname "$0")/../.."
new_src=$(readlink -f "$1"); old_src=$(readlink -f "$2")
RUNS=${RUNS:-3}; CUT=${CUT:-20}
export EZSIM_DIR=/var/tmp/ezpz-bench-stops EZSIM_PREFIX=ezbst EZSIM_NET=10.250.35
export SLURM_CONF=$EZSIM_DIR/slurm/slurm.conf
sim=scripts/cluster-sim
D=$EZSIM_DIR
X="$sim/exec.sh"
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" 4 >/dev/null
"$sim/slurm-up.sh" >/dev/null
mkdir -p "$D/bin" "$D/home"
cp "$new_src" "$D/bin/ezpz-new"; cp "$old_src" "$D/bin/ezpz-old"
cp tests/data/stop_handler.py "$D/"
common=(env EZPZ_MACHINE=local EZPZ_HOME="$D/home" HOME="$D/home" PYTHONUNBUFFERED=1)
rank=(/usr/bin/python3 "$D/stop_handler.py")

# every node idle again (an aborted step leaves its job completing for a while)
idle() {
  local k
  for ((k = 0; k < 1200; k++)); do
    [ "$("$X" sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -ge 4 ] && return 0
    sleep 0.1
  done
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ctrl_c WHO: seconds from the (first) SIGINT to the exit, and how many ranks printed KeyboardInterrupt.
ctrl_c() {
  idle
  local who=$1 out="$D/out.txt" pattern pid k s e
  : >"$out"
  if [ "$who" = srun ]; then
    "$X" "${common[@]}" salloc -N 4 --ntasks-per-node=1 srun "${rank[@]}" >"$out" 2>&1 &
    pattern="^srun ${rank[*]}"
  else
    "$X" "${common[@]}" salloc -N 4 --ntasks-per-node=1 "$D/bin/ezpz-$who" launch -- "${rank[@]}" >"$out" 2>&1 &
    pattern="^$D/bin/ezpz-$who launch"
  fi
  local job=$!
  for ((k = 0; k < 600; k++)); do [ "$(grep -c '^ready ' "$out")" -ge 4 ] && break; sleep 0.05; done
  pid=$(pgrep -o -f -- "$pattern")
  s=$(date +%s.%N)
  kill -INT "$pid"
  if [ "$who" = srun ]; then sleep 0.3; kill -INT "$pid"; fi  # srun's abort: two within a second
  wait "$job" || true
  e=$(date +%s.%N)
  echo "$(echo "$e - $s" | bc) $(grep -c 'KeyboardInterrupt' "$out")"
  pkill -9 -f stop_handler.py 2>/dev/null || true
}

# down WHO: seconds from the launch's start to its exit with node4 DOWN (cut at CUT).
down() {
  idle
  cat >"$D/down.sh" <<EOF
#!/bin/bash
scontrol update NodeName=node4 State=DOWN Reason=bench
s=\$(date +%s.%N)
timeout $CUT "$D/bin/ezpz-$1" launch $([ "$1" = new ] && echo --start-timeout 5) -- ${rank[*]} >/dev/null 2>&1
echo "\$(date +%s.%N) - \$s" | bc
scontrol update NodeName=node4 State=RESUME || true
EOF
  chmod +x "$D/down.sh"
  { "$X" "${common[@]}" salloc -N 4 --ntasks-per-node=1 --no-kill "$D/down.sh" 2>/dev/null || true; } | grep -E '^[0-9.]+$' | tail -1
}

declare -A t n
for who in srun new old; do t[$who]=""; n[$who]=""; done
for ((r = 0; r < RUNS; r++)); do
  for who in srun new old; do
    read -r secs seen < <(ctrl_c "$who")
    t[$who]+="$secs"$'\n'; n[$who]+="$seen"$'\n'
  done
done
dn=""; do_=""
for ((r = 0; r < RUNS; r++)); do
  dn+="$(down new)"$'\n'
  do_+="$(down old)"$'\n'
done
echo "-- 4 nodes, median of $RUNS                         Ctrl-C to exit (s)   ranks that saw SIGINT"
printf '  %-46s %10s %14s/4\n' "bare srun, SIGINT twice (its abort)" "$(median <<<"${t[srun]}")" "$(median <<<"${n[srun]}")"
printf '  %-46s %10s %14s/4\n' "ezpz launch (new), one SIGINT" "$(median <<<"${t[new]}")" "$(median <<<"${n[new]}")"
printf '  %-46s %10s %14s/4\n' "ezpz launch (old), one SIGINT" "$(median <<<"${t[old]}")" "$(median <<<"${n[old]}")"
echo "-- node4 DOWN, --no-kill allocation: launch start to exit (s; cut at $CUT s)"
printf '  %-46s %10s\n' "ezpz launch (new), --start-timeout 5" "$(median <<<"$dn")"
printf '  %-46s %10s\n' "ezpz launch (old)" "$(median <<<"$do_")"

#!/usr/bin/env bash
# stop-sshd.sh NODE...: stop those nodes' sshd and return once each is gone (a zombie counts as
# gone), so that the next connection is refused rather than racing the daemon's exit. Exit 1 if
# one is still running after 30 s.
D=${EZSIM_DIR:-/var/tmp/ezsim}
rc=0
for n in "$@"; do
  pid=$(cat "$D/nodes/$n/sshd.pid") || { rc=1; continue; }
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 600); do
    st=$(ps -o stat= -p "$pid" 2>/dev/null) && [ "${st:0:1}" != Z ] || continue 2
    sleep 0.05
  done
  echo "stop-sshd: $n's sshd ($pid) still runs after 30 s" >&2
  rc=1
done
exit $rc

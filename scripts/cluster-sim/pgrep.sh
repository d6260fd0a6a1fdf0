#!/usr/bin/env bash
# pgrep.sh [-c|-a] PATTERN: like `pgrep -f PATTERN`, but only the processes that run inside this
# test bed ($EZSIM_DIR: its login node or one of its nodes, each a network namespace of its own).
# The simulated nodes share the machine's kernel, so a plain pgrep also sees every other
# process on it (a test run in another terminal: a rank's `sleep 300`, an e2e test's
# `__yeet-relay`). -c counts them, -a adds each one's command line.
# Exits 0 when one matched, 1 when none did, as pgrep does.
set -u
D=${EZSIM_DIR:-/var/tmp/ezsim}
mode=pids
case ${1:-} in -c) mode=count; shift ;; -a) mode=args; shift ;; esac
pattern=${1:?usage: pgrep.sh [-c|-a] PATTERN}
nets=""
for f in "$D/hub.pid" "$D"/nodes/*/launcher.pid; do
  [ -e "$f" ] && nets+="$(readlink "/proc/$(cat "$f")/ns/net" 2>/dev/null)"$'\n'
done
found=()
for p in $(pgrep -f -- "$pattern"); do
  n=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
  grep -qxF -- "$n" <<<"$nets" && found+=("$p")
done
case $mode in
  count) echo "${#found[@]}" ;;
  args) for p in "${found[@]}"; do echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done ;;
  *) [ "${#found[@]}" -gt 0 ] && printf '%s\n' "${found[@]}" ;;
esac
[ "${#found[@]}" -gt 0 ]

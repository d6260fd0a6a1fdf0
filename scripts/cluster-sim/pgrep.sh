#!/usr/bin/env bash
# pgrep.sh [-c|-a] PATTERN: like `pgrep -f PATTERN`, but only the processes that run inside this
# test bed ($EZSIM_PREFIX: its login node or one of its nodes, each a network namespace of its own).
# The simulated nodes share the machine's kernel, so a plain pgrep also sees every other
# process on it (a test run in another terminal: a rank's `sleep 300`, an e2e test's
# `__yeet-relay`). -c counts them, -a adds each one's command line.
# Exits 0 when one matched, 1 when none did, as pgrep does; 2 when no such bed is up.
set -u
mode=pids
case ${1:-} in -c) mode=count; shift ;; -a) mode=args; shift ;; esac
pattern=${1:?usage: pgrep.sh [-c|-a] PATTERN}
P=${EZSIM_PREFIX:-ezsim}
# The bed's namespaces by their names (ip netns keeps them for as long as the bed is up), not by
# a process in them: a node's first process is its sshd, which tests stop.
nets=""
for f in "/run/netns/$P-hub" "/run/netns/$P-node"[0-9]*; do
  [ -e "$f" ] && nets+="$(stat -L -c 'net:[%i]' "$f" 2>/dev/null)"$'\n'
done
[ -n "$nets" ] || { echo "pgrep.sh: no test bed named $P is up (EZSIM_PREFIX)" >&2; exit 2; }
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

#!/usr/bin/env bash
# exec.sh CMD...           run CMD on the login node (its network, /etc/hosts, /tmp, ~/.ssh)
# exec.sh -n nodeK CMD...  run CMD inside node K's namespaces, without ssh
D=${EZSIM_DIR:-/var/tmp/ezsim}
if [ "${1:-}" = -n ]; then pid=$(cat "$D/nodes/$2/launcher.pid"); shift 2
else pid=$(cat "$D/hub.pid"); fi
exec nsenter -t "$pid" -n -m -u --wd="$PWD" "$@"

#!/usr/bin/env bash
# The multi-node benchmarks' payload: a venv plus a copy of Debian's dist-packages (about 300 MB
# in 11,000 files), made once in $1 (default /var/tmp/ezpz-bench-payload).
set -euo pipefail
P=${1:-/var/tmp/ezpz-bench-payload}
if [ ! -f "$P/.complete" ]; then
  rm -rf "$P"; mkdir -p "$P"
  /usr/bin/python3 -m venv "$P/venv"
  cp -a /usr/lib/python3/dist-packages/. "$P/venv/lib/python3.11/site-packages/"
  touch "$P/.complete"
fi

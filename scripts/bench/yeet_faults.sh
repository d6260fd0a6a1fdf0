#!/usr/bin/env bash
# Fault injection, timed: tests/cluster/test_yeet_faults.sh (a relay killed, a node's disk filled,
# a byte corrupted in flight, a node's link dropped; then relays stalled by SIGSTOP through libssh
# and OpenSSH) with OLD and then NEW in one run, on the same simulated 6-node cluster, and both
# tables printed: each row's outcome must be the same and its seconds about the same.
# Needs root (the simulator's namespaces); holds the cluster lock the tests use.
# Usage: scripts/bench/yeet_faults.sh NEW_EZPZ OLD_EZPZ
set -euo pipefail
cd "$(dirname "$0")/../.."
new=$(readlink -f "$1"); old=$(readlink -f "$2")
for which in old new; do
  bin=$old; [ "$which" = new ] && bin=$new
  for mode in faults stall; do
    echo "== $which ($bin), $mode"
    EZPZ_SOURCE_DIR=$PWD EZPZ_BIN=$bin flock -o /tmp/ezpz-cluster.lock tests/cluster/test_yeet_faults.sh "$mode" 2>&1 |
      sed -n '/^| fault/,/^yeet fault injection/p'
  done
done

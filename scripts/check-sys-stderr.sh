#!/usr/bin/env bash
# sys/ writes ezpz's own words to stderr only through the logger (core/base/log.hpp: log::info,
# log::debug, log::line), so that -v, EZPZ_LOG_LEVEL and a relay's origin hold for every line.
# A rank's or a launcher's bytes passed on are data, written to their descriptors, not here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
found=$(grep -rnE 'std::cerr|std::clog|fprintf\(stderr|fputs\([^;]*stderr|fwrite\([^;]*stderr|write\(STDERR_FILENO|write\(2,|perror\(' src/sys)
if [ -n "$found" ]; then
  echo "$found"
  echo "sys/ writes to stderr around the logger: use log::line (core/base/log.hpp)"
  exit 1
fi
echo "sys/: stderr only through the logger"

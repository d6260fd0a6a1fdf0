#!/usr/bin/env bash
# scripts/ctest-strict.sh PRESET [CTEST ARGS...]: ctest --preset PRESET, failing when any test did not
# run: skipped (its SKIP_RETURN_CODE, 77, which a Python test file exits with when it skipped
# something), disabled, or "Not Run" for any other reason; and when no test matched at all.
# scripts/test.sh (CI) runs the suite this way, so that it cannot go green by skipping.
set -uo pipefail
preset=${1:?usage: scripts/ctest-strict.sh PRESET [CTEST ARGS...]}
shift
cd "$(dirname "$0")/.." || exit 1
junit="$PWD/build/$preset/ctest-junit.xml"
rm -f "$junit"
ctest --preset "$preset" --no-tests=error --output-junit "$junit" "$@"
rc=$?
python3 - "$junit" <<'PY' || rc=1
import sys
import xml.etree.ElementTree as ET

try:
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
except (OSError, ET.ParseError) as e:
    sys.exit(f"ctest-strict: no JUnit report from ctest ({e})")
not_run = [(c.get("name"), c.get("status")) for c in cases
           if c.get("status") not in ("run", "fail") or c.find("skipped") is not None]
if not_run:
    print(f"ctest-strict: FAIL: {len(not_run)} test(s) did not run (a skip is not a pass):", file=sys.stderr)
    for name, status in not_run:
        print(f"  {name} ({status})", file=sys.stderr)
    sys.exit(1)
PY
exit "$rc"

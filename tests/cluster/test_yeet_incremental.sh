#!/usr/bin/env bash
# Incremental ezpz yeet on 4 simulated nodes: after pip installs a package and upgrades another,
# only what changed is sent (new files, removed files, librsync deltas for a large changed file);
# nodes that missed the last yeet or were edited by hand get a full copy; Ctrl-C during a delta
# leaves every node's previous copy intact; --full sends everything. A yeet with nothing changed
# keeps every copy as it is (and still finds a node edited by hand).
export EZSIM_DIR=/var/tmp/ezpz-ctest-incr EZSIM_PREFIX=ezpzi EZSIM_NET=10.250.24
W=/var/tmp/ezpz-ctest-incr-src
. "${EZPZ_SOURCE_DIR:?}/tests/cluster/bed.sh"
bed_up 4
common=(env EZPZ_MACHINE=local HOME="$D/home")
on() { "$X" ssh "$1" "${@:2}"; }
nodes="node1 node2 node3 node4"
dst="/tmp/inc env"
yeet() { "$X" "${common[@]}" "$ezpz" yeet "$venv" --dst "$dst" --hostfile "$D/hostfile" "$@"; }
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
site=lib/python3.11/site-packages

# A venv with tinypkg 1.0 and a 1 MB data file (the large file that will change a little; the
# venv's files are 10 MB more, so what changes stays under an eighth: the nodes keep the copy it
# replaces as their spare).
venv="$W/venv"
whl="$W/wheels"; mkdir -p "$whl"
for spec in "tinypkg 1.0" "tinypkg 2.0" "otherpkg 1.0"; do
  /usr/bin/python3 "$src/tests/data/make_wheel.py" "$whl" $spec >/dev/null || { echo "FAIL: wheel $spec"; exit 1; }
done
/usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q --no-index "$whl/tinypkg-1.0-py3-none-any.whl" \
  || { echo "FAIL: cannot build the test venv"; exit 1; }
python3 -c "import random; random.seed(1); open('$venv/data.txt','w').write(''.join(random.choice('abcdefgh \n') for _ in range(1_000_000)))"

# 1. First yeet: everything (no manifest yet); every node now holds the manifest.
yeet --json > "$W/1.json" 2>/dev/null || fail "first yeet: $(cat "$W/1.json")"
[ "$(field "$W/1.json" 'r["incremental"]["mode"]')" = full ] || fail "first yeet should be full"
full_bytes=$(field "$W/1.json" 'r["stream"]["bytes"]')
for n in $nodes; do on "$n" "test -f '$dst/.ezpz-manifest'" || fail "no manifest on $n"; done

# 2. pip installs otherpkg and upgrades tinypkg to 2.0; 200 bytes of the data file change.
"$venv/bin/pip" install -q --no-index "$whl/otherpkg-1.0-py3-none-any.whl" "$whl/tinypkg-2.0-py3-none-any.whl" \
  || fail "pip install"
python3 - "$venv/data.txt" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[500_000:500_200] = b"X" * 200; open(p, "wb").write(b)
PY
yeet --dry-run --json > "$W/dry.json" 2>/dev/null || fail "dry run"
python3 - "$W/dry.json" <<'PY' || fail "dry-run estimate: $(cat "$W/dry.json")"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["incremental"]["estimate"]
assert r["incremental"]["mode"] == "delta" and e["files"] >= 5 and e["removed"] >= 1 and 0 < e["bytes"] < 4_000_000, e
PY
yeet --json > "$W/2.json" 2>/dev/null || fail "delta yeet: $(cat "$W/2.json")"
python3 - "$W/2.json" "$full_bytes" <<'PY' || fail "delta report: $(cat "$W/2.json")"
import json, sys
r = json.load(open(sys.argv[1])); full = int(sys.argv[2]); inc = r["incremental"]
assert inc["mode"] == "delta" and r["failed"] == [] and inc["full_copies"] == [], inc
assert inc["deltas"] >= 1 and inc["removed"] >= 1 and inc["files"] >= 5, inc
assert r["stream"]["bytes"] * 3 < full, (r["stream"]["bytes"], full)
# The head announced the delta: each node readied its copy while the head built it, from the
# spare the first yeet left (a twin of the copy), not a clone.
assert all("early_s" in n["steps"] and "check_s" not in n["steps"] for n in r["remote"]), r["remote"]
assert all("spare_s" in n["steps"] and "clone_s" not in n["steps"] for n in r["remote"]), r["remote"]
PY
# The copy each replaced is its spare now: the previous version, sharing the files that did not change.
for n in $nodes; do
  on "$n" "test -d '$dst.ezpz-spare/$site/tinypkg-1.0.dist-info' && test ! -e '$dst.ezpz-spare/$site/otherpkg' && \
    test \$(stat -c %i '$dst.ezpz-spare/$site/pip/__init__.py') = \$(stat -c %i '$dst/$site/pip/__init__.py')" || fail "no spare on $n"
done
"$X" test -d "$dst.ezpz-spare/$site/tinypkg-1.0.dist-info" || fail "no spare on the login node"
want_data=$(sha256sum < "$venv/data.txt")
for n in $nodes; do
  got=$(on "$n" "'$dst/bin/python' -c 'import tinypkg, otherpkg; print(tinypkg.VERSION)'; '$dst/bin/otherpkg-hello'; test ! -e '$dst/$site/tinypkg-1.0.dist-info' && echo gone; sha256sum < '$dst/data.txt'" 2>&1)
  [ "$got" = "$(printf '2.0\notherpkg hello from %s\ngone\n%s' "$dst" "$want_data")" ] || fail "delta on $n: $got"
done

# 2b. Nothing changed: the head keeps its copy as it is (no work directory, no swap) and every
#     node checks its own against the manifest and keeps it (the same inode); node4, edited by
#     hand meanwhile, is found all the same and gets the whole copy from a peer.
inodes() { for n in node1 node2 node3; do on "$n" "stat -c %i '$dst'"; done; "$X" stat -c %i "$dst"; }
before=$(inodes)
on node4 "echo '# by hand' >> '$dst/$site/otherpkg/__init__.py'"
yeet --json > "$W/2b.json" 2>/dev/null || fail "no-op yeet: $(cat "$W/2b.json")"
python3 - "$W/2b.json" <<'PY' || fail "no-op report: $(cat "$W/2b.json")"
import json, sys
r = json.load(open(sys.argv[1])); inc = r["incremental"]
assert r["failed"] == [] and inc["mode"] == "delta", r
assert "check_s" in r["steps"] and "copy_s" not in r["steps"] and "manifest_s" not in r["steps"], r["steps"]
assert (inc["files"], inc["deltas"], inc["removed"]) == (0, 0, 0), inc
assert [c["host"] for c in inc["full_copies"]] == ["node4"], inc["full_copies"]
for n in r["remote"]:
    if n["host"] != "node4":
        assert "check_s" in n["steps"] and "clone_s" not in n["steps"], n
PY
[ "$(inodes)" = "$before" ] || fail "no-op yeet: a copy was replaced: $before / $(inodes)"
on node4 "cmp -s '$dst/$site/otherpkg/__init__.py' '$venv/$site/otherpkg/__init__.py'" || fail "no-op yeet: node4 not repaired"

# 3. node2 edited by hand, node3 missed the last yeet (its manifest is an old one): both get a
#    full copy from a peer, the others the delta.
on node2 "echo '# edited' >> '$dst/$site/otherpkg/__init__.py'"
on node3 "cp '$dst/.ezpz-manifest' /tmp/m && sed -i 's/\"s\":/\"s\": /' /tmp/m && cp /tmp/m '$dst/.ezpz-manifest'"
echo more > "$venv/extra.txt"
yeet --json > "$W/3.json" 2>/dev/null || fail "yeet with diverged nodes: $(cat "$W/3.json")"
python3 - "$W/3.json" <<'PY' || fail "diverged-nodes report: $(cat "$W/3.json")"
import json, sys
r = json.load(open(sys.argv[1])); inc = r["incremental"]
assert r["failed"] == [], r["failed"]
assert sorted(c["host"] for c in inc["full_copies"]) == ["node2", "node3"], inc["full_copies"]
assert all(n["repaired_from"] for n in r["remote"] if n["host"] in ("node2", "node3")), r["remote"]
# The others started from their spares (the copy before the last), brought up to their copies.
assert all("spare_s" in n["steps"] for n in r["remote"] if n["host"] in ("node1", "node4")), r["remote"]
PY
for n in $nodes; do
  on "$n" "cmp -s '$dst/$site/otherpkg/__init__.py' '$venv/$site/otherpkg/__init__.py' && test -f '$dst/extra.txt'" \
    || fail "$n does not hold the new copy after the repair"
done

# 4. Ctrl-C during a delta (a 150 MB new file): every node keeps the previous copy, no work left.
head -c 150000000 /dev/urandom > "$venv/big.bin"
"$X" "${common[@]}" "$ezpz" yeet "$venv" --dst "$dst" --hostfile "$D/hostfile" >/dev/null 2>&1 &
pid=$!
# Ctrl-C once a relay writes (a work path beside the destination on its node), not after a fixed
# delay; up to 60 s (the asan preset on 2 busy cores).
started=""
for _ in $(seq 1 1200); do
  for p in $(pgrep -f -- "^$ezpz __yeet-relay --host node[0-9] --children .* --dst $dst( |\$)"); do
    ls -d "/proc/$p/root$dst".ezpz-tmp-* >/dev/null 2>&1 && started=yes
  done
  [ -n "$started" ] && break
  sleep 0.05
done
[ -n "$started" ] || fail "Ctrl-C during a delta: no relay started writing"
kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C during a delta: exit $rc, wanted 130"
# The relays clean up after the head has gone: each node gets up to 60 s, not a fixed second.
for n in $nodes; do
  for _ in $(seq 1 60); do
    left=$(on "$n" "test ! -e '$dst/big.bin' && '$dst/bin/python' -c 'import otherpkg' && ls -d /tmp/*.ezpz-* 2>/dev/null | grep -v ezpz-spare; echo end")
    [ "$left" = end ] && break
    sleep 1
  done
  [ "$left" = end ] || fail "Ctrl-C during a delta on $n: $left"
done
rm -f "$venv/big.bin"

# 5. --full sends everything, and says why.
yeet --full --json > "$W/5.json" 2>/dev/null || fail "--full: $(cat "$W/5.json")"
python3 - "$W/5.json" <<'PY' || fail "--full report: $(cat "$W/5.json")"
import json, sys
r = json.load(open(sys.argv[1])); inc = r["incremental"]
assert inc["mode"] == "full" and inc["reason"] == "--full" and r["failed"] == [], inc
PY

bed_done "incremental yeet"

#!/bin/bash
# dcpicat_vprof.sh - dcpicat prints value profiles (.vprof) as their hotlists, the way DCPI's
# dcpivcat did: tests/data/golden.vprof (written by tests/check_vprof.c's golden case) against
# the expected text tests/data/golden.vprof.txt; -no_header leaves only the blocks; a truncated
# copy is one line naming the file and the reason, exit 1; a .prof and a .vprof in one call are
# both printed.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
T=$(mktemp -d /tmp/dcpi-e2e-vcat.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp "$SRC/tests/data/golden.vprof" "$T/"
(cd "$T" && "$BIN/dcpicat" golden.vprof) >"$T/out" 2>"$T/err" || fail "dcpicat failed: $(cat "$T/err")"
diff "$SRC/tests/data/golden.vprof.txt" "$T/out" >"$T/diff" || fail "output differs: $(cat "$T/diff")"
"$BIN/dcpicat" -no_header "$T/golden.vprof" >"$T/nh" || fail "-no_header failed"
[ "$(head -1 "$T/nh")" = "0x10 vtot 7 seen 10 err 0" ] || fail "-no_header: $(head -3 "$T/nh")"
grep -q '^version' "$T/nh" && fail "-no_header printed the header"

head -c 200 "$T/golden.vprof" >"$T/cut.vprof"
out=$("$BIN/dcpicat" "$T/cut.vprof" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "truncated .vprof: exit $rc: $out"
[ "$(wc -l <<<"$out")" = 1 ] && grep -q "^dcpicat: $T/cut.vprof: " <<<"$out" ||
    fail "truncated .vprof: not one line naming the file: $out"

prof=$(ls "$SRC"/tests/data/*.prof 2>/dev/null | head -1)
if [ -n "$prof" ]; then
    "$BIN/dcpicat" "$prof" "$T/golden.vprof" >"$T/both" 2>&1 || fail "prof + vprof: $(cat "$T/both")"
    grep -q '^0x24 vtot 21 seen 21 err 2$' "$T/both" || fail "prof + vprof: no vprof block"
fi
echo "PASS"

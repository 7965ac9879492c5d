#!/bin/bash
# rebuilt_binary.sh - profiles stay named after their binary is rebuilt, upgraded or deleted
# (issue 13 item 7): dcpid keeps the symbols of every profiled image with a build-id once per
# database (DB/.symcache/syms-BUILDID); dcpiprof uses them when the file on disk no longer
# matches the profile's build-id. A program is profiled, rebuilt with different code, then
# deleted: dcpiprof names alpha and beta with the same counts each time (before: unknown_rou).
# Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-rebuilt.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
src() { # MOD: a program whose alpha and beta loop on i % MOD
    printf '#include <stdio.h>\n'
    printf '__attribute__((noinline)) long alpha(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i %% %s; return s; }\n' "$1"
    printf '__attribute__((noinline)) long beta(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i %% 11; return s; }\n'
    printf 'int main(void) { long t = 0; for (int r = 0; r < 4; r++) t += alpha(30000000) + beta(15000000); printf("%%ld\\n", t); return 0; }\n'
}
src 7 >"$T/p.c"
gcc -O1 -o "$T/prog" "$T/p.c" || fail "gcc failed"
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$T/prog" >/dev/null 2>"$T/err" || fail "dcpid failed: $(cat "$T/err")"
[ -n "$(ls "$T"/db/.symcache/syms-* 2>/dev/null)" ] || fail "no symbols cached: $(ls -a "$T/db")"
rows() { "$BIN/dcpiprof" -db "$T/db" | awk -v p="$T/prog" '$5 == p {print $4, $1}' | sort; }
before=$(rows)
grep -q '^alpha ' <<<"$before" && grep -q '^beta ' <<<"$before" || fail "alpha/beta not named: $before"
src 13 >"$T/p.c"
gcc -O1 -o "$T/prog" "$T/p.c" || fail "gcc (rebuild) failed"
after=$(rows)
[ "$after" = "$before" ] || fail "after a rebuild: '$after', before: '$before'"
rm -f "$T/prog"
gone=$(rows)
[ "$gone" = "$before" ] || fail "after deleting the binary: '$gone', before: '$before'"
echo "PASS: named after rebuild and deletion: $(tr '\n' ' ' <<<"$before")"

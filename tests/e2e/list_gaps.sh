#!/bin/bash
# list_gaps.sh - dcpilist -source on a function whose lines are far apart in its file (issue 13
# item 12: inlined code spreads a function over a whole file; sqlite3VdbeExec printed 151,211
# lines for 203 with samples): only lines with code are printed, with 3 lines of context on
# each side of a gap and one line saying how many it left out. Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-gaps.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
{
    printf '#include <stdio.h>\nstatic inline long far_helper(long x)\n{\n'
    printf '    return (x * 3 + 1) ^ (x >> 3);\n}\n'
    for i in $(seq 400); do printf '/* filler line %d */\n' "$i"; done
    printf '__attribute__((noinline)) long hot(long n)\n{\n    volatile long s = 0;\n'
    printf '    for (long i = 0; i < n; i++)\n        s += far_helper(i) %% 7;\n    return s;\n}\n'
    printf 'int main(void)\n{\n    long t = 0;\n    for (int r = 0; r < 8; r++)\n'
    printf '        t += hot(20000000);\n    printf("%%ld\\n", t);\n    return 0;\n}\n'
} >"$T/gap.c"
gcc -O2 -g -o "$T/gap" "$T/gap.c" || fail "gcc failed"
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$T/gap" >/dev/null 2>"$T/err" || fail "dcpid failed: $(cat "$T/err")"
"$BIN/dcpilist" -db "$T/db" -source hot "$T/gap" >"$T/out" 2>&1 || fail "dcpilist -source failed: $(cat "$T/out")"
grep -q '^ *\.\.\.\. ([0-9]* lines without code)$' "$T/out" || fail "no gap line: $(cat "$T/out")"
grep -q 'filler line 200 ' "$T/out" && fail "the middle of the gap was printed"
grep -q 'filler line 1 \*/' "$T/out" && grep -q 'filler line 400 \*/' "$T/out" ||
    fail "no context around the gap: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" -lt 40 ] || fail "$(wc -l <"$T/out") lines printed for a 7-line function"
echo "PASS: $(grep -c . "$T/out") lines, gap: $(grep 'lines without code' "$T/out" | tr -s ' ')"

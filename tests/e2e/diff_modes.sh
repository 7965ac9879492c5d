#!/bin/bash
# diff_modes.sh - dcpidiff on a workload whose answer is known by construction
# (samples/work-diff.c: from mode 1 to mode 2, diff_f's share of the work moves from 20% to 40%,
# diff_g's and diff_h's from 40% to 30% each, counted in loop iterations):
#  (1) mode 1 vs mode 2 (two databases): the first row is diff_f, its share grew, and it is
#      significant (adjusted p < 0.001); the two epochs of one database (@EPOCH) give the same
#      first row; -source names diff_f's loop line, -asm its instructions, -csl parses;
#  (2) mode 1 vs mode 1: no row of the program is significant. The assertion uses -threshold
#      1e-6, so that the test fails falsely less than once in 10^6 runs under the test's model
#      (the default level 0.001 is checked over 20 pairs by bench/dcpidiff_noise.sh);
#  (3) two builds of the program in two directories (build-ids differ): procedures are matched
#      by name across them, -asm refuses with one line, -source works;
#  (4) bad input: one-line errors, exit 2 for usage and 1 for the rest.
# Sample counts: at least 2000 samples of the program per set (the runs are redone longer until
# they have them, up to 8 x ROUNDS, lib/stats.sh stat_until); then a 20-point move is 7.7
# binomial standard deviations of the difference or more (false failure far below 1e-6).
# ROUNDS: 300 rounds give ~2770 samples at -freq 4000 in the 2-core VM, quiet or under make
# test (~9.2 a round: cpu-clock counts the rounds' CPU time, not the wall time), 1.4 x the 2000.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
# significance needs the full sample counts (a test of power), also in make test's quick pass
STAT_QUICK=0
e2e_counting diff
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
W=$BIN/samples/work-diff
D=$BIN/dcpidiff
ROUNDS=${DIFF_ROUNDS:-300}

record() { # DB MODE [PROGRAM]
    to 120 "$BIN/dcpid" -db "$1" -freq 4000 -event cpu-clock -- "${3:-$W}" "$2" "$ROUNDS" \
        >/dev/null 2>"$T/err" || fail "dcpid -- work-diff $2 failed: $(cat "$T/err")"
}
# CSV field N of the first data row of dcpidiff -csl output in FILE
first() { awk -F, -v n="$2" 'NR == 2 { print $n; exit }' "$1"; }
# samples of the program in set FILE (-i -all -csl): count_a (N=1) or count_b (N=3)
prog_samples() { awk -F, -v n="$2" '$9 ~ /work-diff$/ { s += $n } END { print s + 0 }' "$1"; }

# the three sets, with ROUNDS, then more (from the rate seen) until each has the 2000 samples
# (1) asserts (the later records use the ROUNDS this settled on)
ROUNDS0=$ROUNDS
run() {
    ROUNDS=$((ROUNDS0 * $1))
    rm -rf "$T/m1" "$T/m2" "$T/m1b"
    record "$T/m1" 1
    record "$T/m2" 2
    record "$T/m1b" 1
    "$D" -i -all -csl "$T/m1" "$T/m2" >"$T/img" 2>&1 || { fail "dcpidiff -i failed: $(cat "$T/img")"; return 1; }
    na=$(prog_samples "$T/img" 1) nb=$(prog_samples "$T/img" 3)
    nc=$("$D" -i -all -csl "$T/m1" "$T/m1b" 2>/dev/null | awk -F, '$9 ~ /work-diff$/ { s += $3 } END { print s + 0 }')
}
count() { printf '%s\n' "$na" "$nb" "$nc" | sort -n | head -1; }
stat_until 2000 8 run count || exit 1

# --- (1) a 20-point move
stat_min "samples of work-diff in mode 1" "$na" 2000 || fail "too few samples"
stat_min "samples of work-diff in mode 2" "$nb" 2000 || fail "too few samples"
"$D" -csl "$T/m1" "$T/m2" work-diff >"$T/d12" 2>&1 || fail "dcpidiff failed: $(cat "$T/d12")"
name=$(first "$T/d12" 9) delta=$(first "$T/d12" 5) q=$(first "$T/d12" 7)
[ "$name" = diff_f ] || fail "first row is '$name', not diff_f: $(cat "$T/d12")"
awk -v d="$delta" -v q="$q" 'BEGIN { exit !(d > 0 && q < 0.001) }' ||
    fail "diff_f: diff '$delta', adjusted p '$q' (want > 0 and < 0.001)"
echo "ok (1) diff_f first: $delta points, adjusted p $q ($na and $nb samples)"
"$D" "$T/m1" "$T/m2" work-diff >"$T/table" 2>&1 || fail "dcpidiff (table) failed"
grep -Eq '^ *[0-9]+ +[0-9.]+% +[0-9]+ +[0-9.]+% +\+[0-9.]+ +<0\.001 +\*\*\* +diff_f ' "$T/table" ||
    fail "the table has no 'p <0.001 ***' row for diff_f: $(cat "$T/table")"
grep -q '^test: exact conditional binomial test' "$T/table" || fail "no test line: $(cat "$T/table")"

# the same two runs as two epochs of one database
record "$T/both" 1
sleep 1 # epochs are named by the second
record "$T/both" 2
epochs=($(ls "$T/both" | grep -E '^[0-9]+$' | sort))
[ "${#epochs[@]}" = 2 ] || fail "expected two epochs in $T/both: ${epochs[*]}"
"$D" -db "$T/both" -csl "@${epochs[0]}" "@${epochs[1]}" work-diff >"$T/ep" 2>&1 ||
    fail "dcpidiff @E1 @E2 failed: $(cat "$T/ep")"
[ "$(first "$T/ep" 9)" = diff_f ] || fail "epochs: first row is not diff_f: $(cat "$T/ep")"

# one procedure: its loop line, its instructions
"$D" -source diff_f -csl "$T/m1" "$T/m2" work-diff >"$T/src" 2>&1 || fail "-source: $(cat "$T/src")"
first "$T/src" 9 | grep -q '^work-diff\.c:[0-9]' || fail "-source: no work-diff.c line: $(cat "$T/src")"
awk -v q="$(first "$T/src" 7)" 'BEGIN { exit !(q < 0.001) }' || fail "-source: $(cat "$T/src")"
"$D" -asm diff_f -all -csl "$T/m1" "$T/m2" work-diff >"$T/asm" 2>&1 || fail "-asm: $(cat "$T/asm")"
grep -Eq '^[0-9]+,.*,"?0x[0-9a-f]+  [a-z]' "$T/asm" || fail "-asm: no instruction row: $(cat "$T/asm")"
echo "ok (1) epochs, -source, -asm"

# --- (2) identical runs: noise only
"$D" -csl -all -threshold 1e-6 "$T/m1" "$T/m1b" work-diff >"$T/d11" 2>&1 ||
    fail "dcpidiff (identical) failed: $(cat "$T/d11")"
sig=$(awk -F, 'NR > 1 && $8 != "noise"' "$T/d11")
[ -z "$sig" ] || fail "identical runs: rows called significant: $sig"
[ "$(awk 'END { print NR }' "$T/d11")" -ge 4 ] || fail "identical runs: rows missing: $(cat "$T/d11")"
"$D" "$T/m1" "$T/m1b" work-diff >"$T/d11t" 2>&1 || fail "dcpidiff (identical, table) failed"
echo "ok (2) identical runs: $(grep -c noise "$T/d11") rows, all noise"

# --- (3) two builds in two directories (build-ids differ)
if command -v gcc >/dev/null; then
    mkdir -p "$T/a" "$T/b"
    gcc -O1 -fno-inline -g -Wl,--build-id=0xaaaaaaaa -o "$T/a/work-diff" "$DCPI_SRC/samples/work-diff.c"
    gcc -O1 -fno-inline -g -Wl,--build-id=0xbbbbbbbb -o "$T/b/work-diff" "$DCPI_SRC/samples/work-diff.c"
    record "$T/ba" 1 "$T/a/work-diff"
    record "$T/bb" 2 "$T/b/work-diff"
    "$D" -csl "$T/ba" "$T/bb" work-diff >"$T/builds" 2>&1 || fail "two builds: $(cat "$T/builds")"
    [ "$(first "$T/builds" 9)" = diff_f ] && [ "$(first "$T/builds" 10)" = "$T/a/work-diff" ] ||
        fail "two builds: first row is not diff_f of $T/a/work-diff: $(cat "$T/builds")"
    "$D" -asm diff_f "$T/ba" "$T/bb" work-diff >"$T/basm" 2>&1
    rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$T/basm")" = 1 ] && grep -q 'one build' "$T/basm" ||
        fail "-asm on two builds: rc $rc, $(cat "$T/basm")"
    "$D" -source diff_f -csl "$T/ba" "$T/bb" work-diff >"$T/bsrc" 2>&1 ||
        fail "-source on two builds: $(cat "$T/bsrc")"
    echo "ok (3) two builds matched by name; -asm: $(cat "$T/basm")"
else
    echo "note: no gcc, (3) two builds not run"
fi

# --- (4) bad input
bad() { # RC ARGS...: exit status RC and one line on stderr
    local want=$1
    shift
    "$D" "$@" >/dev/null 2>"$T/bad"
    local rc=$?
    [ $rc = "$want" ] && [ "$(wc -l <"$T/bad")" = 1 ] && grep -q '^dcpidiff: ' "$T/bad" ||
        fail "dcpidiff $*: rc $rc (want $want), stderr: $(cat "$T/bad")"
}
bad 2 "$T/m1"
bad 2 -threshold 0 "$T/m1" "$T/m2"
bad 2 -keep 200 "$T/m1" "$T/m2"
bad 2 -source diff_f "$T/m1" "$T/m2"
bad 2 -bogus "$T/m1" "$T/m2"
bad 1 "$T/nodb" "$T/m2"
bad 1 "$T/m1@nope" "$T/m2"
bad 1 -s cycles "$T/m1" "$T/m2"
bad 1 -source no_such_proc "$T/m1" "$T/m2" work-diff
echo "ok (4) bad input"

[ $fails = 0 ] || exit 1
echo PASS

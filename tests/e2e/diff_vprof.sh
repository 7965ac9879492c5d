#!/bin/bash
# diff_vprof.sh - dcpidiff -vprof on real value profiles whose answer is known by construction:
# samples/work-accuracy's `div rcx` (procedure acc_div_reg) divides by 10 / 7 / 3 in 70 / 20 / 10%
# of its executions in mode div-reg and in 40 / 20 / 40% in mode div-reg-b (counted per round).
# Value profiles by dcpid -vtrace's default backend for a command (inproc; bp where the agent
# cannot be preloaded) with samples/vp-acc.so (ACC_MNEM=div ACC_VALUE=rcx, a register: no BPF
# needed). Asserted, after at least NMIN value samples per set (stat_min; a
# run of MS of the workload, redone longer until it has them, up to 12 x MS, lib/stats.sh):
#  (1) div-reg vs div-reg-b: the value 0x3 (+30 points) and 0xa (-30) are significant with those
#      signs, 0x7 (unchanged) is noise; each share within the binomial tolerance of the truth
#      (lib/stats.sh) and equal to the value's count over the instruction's vtot as dcpilist
#      prints it (the shares are of the instruction's value samples in each set);
#  (2) div-reg vs div-reg (two runs, two epochs of one database: @latest-1 @latest): no value
#      row significant;
#  (3) bad input: -vtrace with a plugin path, a procedure without values: one line, exit 1.
# The level is -threshold 1e-6 in (1) and (2): under the test's model (independent value samples)
# 0x7, or a row of (2), is called significant less than once in 10^6 runs (BH bounds the chance
# of any false call under no change by the level); at the default 0.001 it would be one in 1000.
# 0x3 and 0xa move by 30 points: with NMIN value samples per set that is over 11 binomial standard
# deviations of the difference, far beyond what 1e-6 needs. Skips (77) when cpu-clock sampling or
# execute breakpoints are unavailable.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
# significance needs the full sample counts (a test of power), also in make test's quick pass
STAT_QUICK=0
e2e_counting diff-vprof
to() { timeout -k 5 "$@"; }
W=$BIN/samples/work-accuracy
VP=$BIN/samples/vp-acc.so
D=$BIN/dcpidiff
NMIN=600
# MS: 0.5 s gives ~2400-4400 value samples of the div (1500 ms gave 4008-7396 in the 2-core VM,
# quiet and under make test: the inproc backend's rate); the 12 x keeps the old 4 x 1500 ms
MS=${DCPI_TEST_MS:-$(stat_ms 500)}
LEVEL=1e-6
INSN=' div rcx \[vp-acc\]$'

for f in dcpid dcpilist dcpidiff samples/work-accuracy samples/vp-acc.so; do
    [ -e "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
export ACC_MNEM=div ACC_VALUE=rcx
to 60 "$BIN/dcpid" -db "$T/bprobe" -event cpu-clock -vtrace "$VP" -- true >"$T/bprobe.out" 2>&1 ||
    { echo "FAIL: probe run failed: $(cat "$T/bprobe.out")"; exit 1; }
log=$(cat "$T"/bprobe/dcpid-*.log)
case "$log" in
*"execute breakpoints unavailable"*)
    e2e_skip "execute breakpoints unavailable: $(grep -o 'unavailable (.*' <<<"$log")" ;;
*"value profiling: 1 plugins, inproc backend"* | *"value profiling: 1 plugins, bp backend"*) ;;
*) echo "FAIL: the probe's log names no breakpoint backend: $log"; exit 1 ;;
esac

# record DB MODE: one profiled run (a new epoch of DB), redone twice and four times as long (in
# place of that epoch) until it has NMIN value samples; the truth line in DB.truth, dcpilist's
# line of the div in DB.line and its vtot in DB.vtot
record() {
    stat_until $NMIN 12 record1 vcount "$@" || return 1
    stat_min "$2 value samples ($1)" "$(cat "$1.vtot")" $NMIN || fail "$2: $(cat "$1.line")"
}
vcount() { cat "$1.vtot"; }
record1() { # SCALE DB MODE
    local scale=$1
    shift
    [ "$scale" = 1 ] || rm -rf "$(ls -d "$1"/[0-9]* | sort | tail -1)" # the short run's epoch
    e2e_after_epoch "$1" # a new epoch name (lib/common.sh)
    to 300 "$BIN/dcpid" -db "$1" -event cpu-clock -vtrace "$VP" -vbudget 8 -- "$W" "$2" $((MS * scale)) \
        >"$1.out" 2>"$1.err" || { fail "$2: dcpid failed: $(cat "$1.err")"; return 1; }
    sed -n 's/^truth //p' "$1.out" >"$1.truth"
    [ -s "$1.truth" ] || { fail "$2: no truth line: $(cat "$1.out")"; return 1; }
    DCPI_PLUGIN_PATH= "$BIN/dcpilist" -db "$1" -asm -vtrace "$VP" -vshow 8 -vcutoff 0 acc_div_reg \
        "$W" >"$1.list" 2>&1 || { fail "$2: dcpilist: $(cat "$1.list")"; return 1; }
    grep -E ' div +rcx ' "$1.list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | head -1 >"$1.line"
    [ -s "$1.line" ] || { fail "$2: no hotlist for the div: $(cat "$1.list")"; return 1; }
    vtot "$(cat "$1.line")" >"$1.vtot"
}

# field NAME VALUE FILE: column NAME (count_a ... signif) of VALUE's row of the div in -csl FILE
field() {
    awk -F, -v c="$1" -v v="$2" -v re="$INSN" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $9 == v && $10 ~ re { print $col[c]; exit }' "$3"
}

record "$T/a" div-reg || exit 1
record "$T/b" div-reg-b || exit 1
record "$T/a" div-reg || exit 1 # a second epoch of $T/a, its latest: the one (1) compares
[ $fails = 0 ] || exit 1
na=$(cat "$T/a.vtot") nb=$(cat "$T/b.vtot")

# --- (1) two mixes
"$D" -vprof acc_div_reg -vtrace vp-acc -csl -all -threshold $LEVEL "$T/a" "$T/b" work-accuracy \
    >"$T/ab" 2>&1 || { echo "FAIL: dcpidiff -vprof: $(cat "$T/ab")"; exit 1; }
head -1 "$T/ab" | grep -q '^count_a,share_a,count_b,share_b,diff,p,p_adj,signif,value,instruction$' ||
    fail "-csl header: $(head -1 "$T/ab")"
[ "$(grep -cE "$INSN" "$T/ab")" = 3 ] || fail "want 3 value rows of the div: $(cat "$T/ab")"
# per value: VALUE SIGN (+ rose, - fell, 0 unchanged)
for vs in 0x3:+ 0xa:- 0x7:0; do
    v=${vs%%:*} sign=${vs#*:}
    ca=$(field count_a "$v" "$T/ab") cb=$(field count_b "$v" "$T/ab")
    pa=$(field share_a "$v" "$T/ab") pb=$(field share_b "$v" "$T/ab")
    d=$(field diff "$v" "$T/ab") q=$(field p_adj "$v" "$T/ab") s=$(field signif "$v" "$T/ab")
    [ -n "$ca" ] || { fail "no row for $v: $(cat "$T/ab")"; continue; }
    case $sign in
    0) [ "$s" = noise ] || fail "$v (unchanged): '$s', adjusted p $q, diff $d (want noise at $LEVEL)" ;;
    *) awk -v d="$d" -v q="$q" -v s="$sign" -v l=$LEVEL \
           'BEGIN { exit !((s == "+" ? d > 0 : d < 0) && q < l) }' && [ "$s" != noise ] ||
           fail "$v: diff $d, adjusted p $q, '$s' (want $sign and below $LEVEL)" ;;
    esac
    # the shares are of the instruction's value samples (dcpilist's vtot) in each set
    awk -v c="$ca" -v n="$na" -v p="$pa" -v e="$cb" -v m="$nb" -v r="$pb" \
        'BEGIN { exit !(c ~ /^[0-9]+$/ && (100 * c / n - p)^2 < 1e-4 && (100 * e / m - r)^2 < 1e-4) }' ||
        fail "$v: shares $pa% / $pb% are not $ca/$na and $cb/$nb (the div's vtot)"
    ta=$(grep -o "=$v:[0-9]*" "$T/a.truth" | cut -d: -f2)
    tb=$(grep -o "=$v:[0-9]*" "$T/b.truth" | cut -d: -f2)
    stat_share "div-reg $v" "$pa" "$ta" "$na" || fail "div-reg $v"
    stat_share "div-reg-b $v" "$pb" "$tb" "$nb" || fail "div-reg-b $v"
    echo "ok (1) $v: $pa% -> $pb% ($d points, adjusted p $q, $s)"
done
"$D" -vprof acc_div_reg -threshold $LEVEL "$T/a" "$T/b" work-accuracy >"$T/abt" 2>&1 ||
    fail "dcpidiff -vprof (table): $(cat "$T/abt")"
grep -Eq '^ *[0-9]+ +[0-9.]+% +[0-9]+ +[0-9.]+% +\+[0-9.]+ +<0\.001 +\*\*\* +0x3 +0x[0-9a-f]+ div rcx \[vp-acc\]$' \
    "$T/abt" || fail "the table has no '<0.001 ***' row for 0x3: $(cat "$T/abt")"
grep -q '^(1 more row within the noise' "$T/abt" || fail "the table hides no noise row: $(cat "$T/abt")"

# --- (2) the same mix twice
[ "$(ls "$T/a" | grep -cE '^[0-9]+$')" = 2 ] || fail "want two epochs in $T/a: $(ls "$T/a")"
"$D" -db "$T/a" -vprof acc_div_reg -csl -all -threshold $LEVEL @latest-1 @latest work-accuracy \
    >"$T/aa" 2>&1 ||
    fail "dcpidiff -vprof (identical): $(cat "$T/aa")"
sig=$(awk -F, 'NR > 1 && $8 != "noise"' "$T/aa")
[ -z "$sig" ] || fail "identical mixes: value rows called significant: $sig"
[ "$(grep -cE "$INSN" "$T/aa")" = 3 ] || fail "identical mixes: want 3 value rows: $(cat "$T/aa")"
echo "ok (2) identical mixes: $(grep -c ',noise,' "$T/aa") value rows, all noise"

# --- (3) bad input
bad() { # WANT ARGS...: exit 1, one line on stderr matching WANT
    local want=$1
    shift
    "$D" "$@" >/dev/null 2>"$T/bad"
    local rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$T/bad")" = 1 ] && grep -q "^dcpidiff: .*$want" "$T/bad" ||
        fail "dcpidiff $*: rc $rc (want 1), stderr: $(cat "$T/bad")"
}
bad "no value profile '$VP'.*value profiles there: vp-acc" -vprof acc_div_reg -vtrace "$VP" \
    "$T/a" "$T/b" work-accuracy
bad "no instruction of acc_branch has values" -vprof acc_branch "$T/a" "$T/b" work-accuracy
echo "ok (3) bad input"

[ $fails = 0 ] || exit 1
echo "PASS: dcpidiff -vprof on div-reg vs div-reg-b ($na and $nb value samples)"

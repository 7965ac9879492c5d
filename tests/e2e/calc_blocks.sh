#!/bin/bash
# calc_blocks.sh - dcpicalc (issue 14) on a procedure whose blocks run in a ratio known by
# construction, and on a Debian program's procedure.
#   - samples/work-calc's calc_loop: an if/else whose then-block runs in 1 of 4 iterations and
#     whose else-block in 3 of 4, both 16 dependent imul (equal time per execution). The then-
#     block's share of the two blocks' samples is 25% within the binomial tolerance of their
#     sample count (tests/e2e/lib/stats.sh); the estimated frequencies are samples / cost, so
#     their share F_T / (F_T + F_E) must lie in the image of that interval under the printed
#     costs; the loop header's frequency (from the flow) is F_T + F_E; -cutoff, -dot (parsed by
#     dot -Tsvg) and -o x.svg.
#   - xz (xz-utils) compressing 0.7 MB: dcpicalc on liblzma's hottest procedure runs and its blocks'
#     samples add up exactly to dcpiprof's count for the procedure.
#   - bad input: one line, exit 2 for usage errors, 1 for the others.
# Skips (77) where perf_event_open cannot sample cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
to() { timeout -k 5 "$@"; }
e2e_counting calc
e2e_require dot graphviz
e2e_require xz xz-utils
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
[ "$fails" -eq 0 ] || exit 1

FREQ=${DCPI_TEST_FREQ:-1000}
MS=$(awk -v f="$FREQ" -v ms="$(stat_ms 1500)" 'BEGIN { printf "%d", ms * 1000 / f }') # ~1500 samples at any rate (~96% in the two blocks: 1000 needed)
W=$BIN/samples/work-calc
# chain_block K: the block whose instructions hold 16 "imul ..., 0xK" (the then-block K=3, the
# else-block K=5)
chain_block() {
    awk -v k="$1" '/^B[0-9]+  0x/ { b = $1 } $3 ~ /^imul$/ && $NF == k { n[b]++ }
        END { for (b in n) if (n[b] == 16) print b }' "$T/calc.txt"
}
# a block row (name range insns samples % cost local freq src per-call successors...)
isrow='$1 ~ /^B[0-9]+$/ && ($9 == "smp" || $9 == "flow")'
row() { awk -v b="$1" "$isrow"' && $1 == b' "$T/calc.txt"; }
calc() { "$BIN/dcpicalc" -db "$T/db" "$@"; }
# run SCALE: work-calc for SCALE x MS, dcpicalc, the then/else blocks' rows (redone twice and four
# times as long until the two blocks have 1000 samples)
run() {
    rm -rf "$T/db"
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -freq "$FREQ" -- "$W" $((MS * $1)) >"$T/w.out" 2>"$T/w.err" ||
        { echo "FAIL: dcpid on work-calc: $(tail -3 "$T/w.err")"; exit 1; }
    calc calc_loop "$W" >"$T/calc.txt" 2>"$T/calc.err" || { echo "FAIL: dcpicalc: $(cat "$T/calc.err")"; exit 1; }
    TB=$(chain_block 0x3)
    EB=$(chain_block 0x5)
    [ -n "$TB" ] && [ -n "$EB" ] || { echo "FAIL: no then/else blocks of 16 imul in: $(cat "$T/calc.txt")"; exit 1; }
    # block row: name range insns samples pct cost local freq src per-call successors...
    read -r _ _ _ ST _ CT _ FT _ <<<"$(row "$TB")"
    read -r _ _ _ SE _ CE _ FE _ <<<"$(row "$EB")"
}
count() { echo $((ST + SE)); }
stat_until 1000 4 run count
HB=$(awk -v t="$TB" -v e="$EB" "$isrow"' {
        s = ""; for (i = 11; i <= NF; i++) { split($i, p, ":"); s = s " " p[1] " " }
        if (index(s, " " t " ") && index(s, " " e " ")) print $1 }' "$T/calc.txt")
[ -n "$HB" ] || fail "no block branches to both $TB and $EB"
echo "then $TB: $ST samples, cost $CT, freq $FT; else $EB: $SE samples, cost $CE, freq $FE; header $HB"

N=$((ST + SE))
if stat_min "then + else blocks" "$N" 1000; then
    P=$(awk -v a="$ST" -v n="$N" 'BEGIN { printf "%.2f", 100 * a / n }')
    stat_share "then-block share of the two blocks' samples" "$P" 25 "$N" || fail "sample share"
    # F = samples / cost: the share of frequencies is a monotone map of the share of samples
    TOL=$(stat_tol 25 "$N")
    read -r QLO QHI Q <<<"$(awk -v p=25 -v t="$TOL" -v ct="$CT" -v ce="$CE" \
        -v ft="$FT" -v fe="$FE" 'function q(s) { s /= 100; return 100 * s * ce / (s * ce + (1 - s) * ct) }
        BEGIN { printf "%.2f %.2f %.2f", q(p - t), q(p + t), 100 * ft / (ft + fe) }')"
    if awk -v q="$Q" -v a="$QLO" -v b="$QHI" 'BEGIN { exit !(q >= a - 0.05 && q <= b + 0.05) }'; then
        echo "ok: then:else frequency share $Q% (1:3 is 25%; allowed $QLO..$QHI% from n $N)"
    else
        fail "then:else frequency share $Q%, allowed $QLO..$QHI% (25% +- $TOL points of samples, costs $CT/$CE)"
    fi
else
    fail "too few samples"
fi
read -r _ _ _ _ _ _ _ FH SRC _ <<<"$(row "$HB")"
awk -v h="$FH" -v t="$FT" -v e="$FE" 'BEGIN { exit !(h > 0 && (h - t - e) ^ 2 <= (0.002 * h) ^ 2) }' ||
    fail "header $HB freq $FH ($SRC) is not then + else = $FT + $FE"
echo "ok: header $HB freq $FH ($SRC) = $FT + $FE"
PROC_N=$(awk '/^event cpu-clock: / { print $3 }' "$T/calc.txt")
SUM=$(awk "$isrow"' { s += $4 } END { print s + 0 }' "$T/calc.txt")
PROF_N=$("$BIN/dcpiprof" -db "$T/db" work-calc | awk '$4 == "calc_loop" { print $1 }')
[ "$SUM" = "$PROC_N" ] && [ "$PROC_N" = "$PROF_N" ] ||
    fail "calc_loop: blocks sum to $SUM, dcpicalc says $PROC_N, dcpiprof $PROF_N"

# -cutoff: only the else-block holds more than half of the samples
calc -cutoff 50 calc_loop "$W" >"$T/cut.txt" || fail "dcpicalc -cutoff 50 failed"
[ "$(awk "$isrow"' { print $1 }' "$T/cut.txt" | tr '\n' ' ')" = "$EB " ] ||
    fail "-cutoff 50 shows other blocks than $EB: $(cat "$T/cut.txt")"
grep -q '^([0-9]* blocks under 50% of the samples left out)$' "$T/cut.txt" || fail "-cutoff: no 'left out' line"

# -dot: parsed by dot, with the two blocks and the header's edges to them
calc -dot calc_loop "$W" >"$T/g.dot" || fail "dcpicalc -dot failed"
dot -Tsvg "$T/g.dot" >"$T/g1.svg" 2>"$T/dot.err" || fail "dot -Tsvg rejects the output: $(cat "$T/dot.err")"
for b in "$TB" "$EB" "$HB"; do
    grep -q "^  $b \[label=\"$b  0x" "$T/g.dot" || fail "no node $b in the dot output"
done
grep -q "^  $HB -> $TB \[label=" "$T/g.dot" && grep -q "^  $HB -> $EB \[label=" "$T/g.dot" ||
    fail "no edges $HB -> $TB, $EB in the dot output"
calc -o "$T/g2.svg" calc_loop "$W" || fail "dcpicalc -o x.svg failed"
grep -q '<svg' "$T/g2.svg" && grep -q ">$TB &#160;0x" "$T/g2.svg" || fail "-o x.svg: no SVG with the blocks"

# a Debian program: xz, liblzma's hottest procedure
head -c 500000 /dev/urandom | base64 >"$T/in.txt" # (~0.4 s of xz -6: hundreds of samples)
to 120 "$BIN/dcpid" -db "$T/xzdb" -event cpu-clock -freq "$FREQ" -- xz -6 -k -c "$T/in.txt" \
    >/dev/null 2>"$T/xz.err" || fail "dcpid on xz: $(tail -3 "$T/xz.err")"
read -r XN XP XI <<<"$("$BIN/dcpiprof" -db "$T/xzdb" | awk '$5 ~ /liblzma/ { print $1, $4, $5; exit }')"
if [ -z "${XN:-}" ]; then
    fail "no liblzma procedure in dcpiprof's output"
else
    "$BIN/dcpicalc" -db "$T/xzdb" "$XP" "$XI" >"$T/xz.txt" 2>&1 || fail "dcpicalc on $XP: $(cat "$T/xz.txt")"
    CN=$(awk '/^event cpu-clock: / { print $3 }' "$T/xz.txt")
    CS=$(awk "$isrow"' { s += $4 } END { print s + 0 }' "$T/xz.txt")
    [ "$CN" = "$XN" ] && [ "$CS" = "$XN" ] || fail "$XP: dcpiprof $XN, dcpicalc $CN, its blocks $CS"
    echo "ok: xz: $XP in $XI: $XN samples in $(awk "$isrow" "$T/xz.txt" | wc -l) blocks, as dcpiprof counts"
fi

# bad input
bad() {
    local want=$1 re=$2 out rc
    shift 2
    out=$("$BIN/dcpicalc" -db "$T/db" "$@" 2>&1)
    rc=$?
    [ "$rc" = "$want" ] && [ "$(wc -l <<<"$out")" = 1 ] && [[ "$out" =~ ^dcpicalc:\ $re ]] ||
        fail "dcpicalc $*: rc $rc (want $want), '$out'"
}
bad 2 "-cutoff wants a number" -cutoff abc calc_loop "$W"
bad 2 "-model wants" -model fast calc_loop "$W"
bad 2 "expected a procedure" calc_loop
bad 1 "no procedure 'nosuch' in" nosuch "$W"
bad 2 "bad range '0x20:0x10'" 0x20:0x10 "$W"
bad 1 "no samples of event 'cycles'" -s cycles calc_loop "$W"
R=$(row B0 | awk '{ sub(/\.\./, ":", $2); print $2 }')
calc "$R" "$W" >"$T/range.txt" 2>&1 && head -1 "$T/range.txt" | grep -q "^calc_loop " &&
    grep -q '^1 blocks, ' "$T/range.txt" || fail "range $R: $(cat "$T/range.txt")"

[ "$fails" -eq 0 ] || exit 1
echo "PASS"

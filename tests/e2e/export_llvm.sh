#!/bin/bash
# e2e: dcpiexport -format llvm on samples/work-icall built with clang at -O2 -gline-tables-only
# -fdebug-info-for-profiling and profiled with dcpid -vtrace vp-calls: llvm-profdata reads the
# profile; the hot loop's line is the hottest line, at its offset from hot_loop's declaration;
# the indirect call's targets carry the work's exact mix within the binomial bound of the value
# samples behind them; the tail call through a pointer (`jmp [rip + tail_fn]`) has its one
# target at its line; scale(), inlined into via_a and via_b, is a nested section under both;
# clang accepts the profile and promotes the indirect call (an `icmp eq` against icall_t0 in the
# IR); -counts blocks gives the loop's control line the count of its body. Then the export without vp-calls data (no targets, said once), of an image without DWARF
# (offset 0, said once), and an empty selection (an error, no file).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
BIN=${DCPI_BIN:?}
SRC=${DCPI_SRC:?}
export LC_ALL=C HOME=${HOME:-/tmp}
e2e_require clang clang
e2e_require llvm-profdata llvm
e2e_counting llvm
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "cpu-clock sampling"

CFLAGS_P="-O2 -gline-tables-only -fdebug-info-for-profiling"
W=$SRC/samples/work-icall.c
# shellcheck disable=SC2086
clang $CFLAGS_P "$W" -o "$T/work-icall" || { echo "FAIL: clang"; exit 1; }
line_of() { grep -n -- "$1" "$W" | head -1 | cut -d: -f1; }
HOT=$(line_of '/\* HOT-LINE')
ICALL=$(line_of '/\* ICALL-LINE')
TAIL=$(line_of '/\* TAIL-LINE')
D_TAIL=$(line_of '^__attribute__((noinline)) long tail_call(')
SCALE=$(line_of '/\* SCALE-LINE')
D_HOT=$(line_of '^__attribute__((noinline)) long hot_loop(')
D_DISPATCH=$(line_of '^__attribute__((noinline)) long dispatch(')
D_SCALE=$(line_of '^static inline long scale(')

# runs of MS ms into new epochs of $T/db until the indirect call has enough value samples
run() {
    e2e_after_epoch "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -vbudget 5 -vtrace vp-calls -- "$T/work-icall" "$1" tail \
        >>"$T/run.out" 2>>"$T/run.err" || { echo "FAIL: dcpid: $(tail -3 "$T/run.err")"; return 1; }
}
# (and the tail call enough to name its one target: count gives min(call's, 30 x the tail's);
# the runs go into several epochs, which the export merges)
count() {
    to 60 "$BIN/dcpilist" -db "$T/db" -epoch all -asm -vprof -vtrace vp-calls dispatch "$T/work-icall" \
        >"$T/list.txt" 2>&1
    to 60 "$BIN/dcpilist" -db "$T/db" -epoch all -asm -vprof -vtrace vp-calls tail_call "$T/work-icall" \
        >"$T/tail.txt" 2>&1
    local l t n=0 nt=0
    l=$(grep -m1 "call.*target:" "$T/list.txt")
    t=$(grep -m1 "jmp.*target:" "$T/tail.txt")
    [ -n "$l" ] && n=$(vtot "$l")
    [ -n "$t" ] && nt=$(vtot "$t")
    echo $((n < 30 * nt ? n : 30 * nt))
}
stat_topup 400 "$(stat_ms 3000)" run count || exit 1
N_VALUES=$(vtot "$(grep -m1 "call.*target:" "$T/list.txt")")
stat_min "value samples at the indirect call" "$N_VALUES" 400 || fail "$(stat_min x "$N_VALUES" 400)"
N_TAIL=$(vtot "$(grep -m1 "jmp.*target:" "$T/tail.txt")")
[ "${N_TAIL:-0}" -ge 3 ] 2>/dev/null || fail "value samples at the tail call: '$N_TAIL': $(grep jmp "$T/tail.txt")"

to 60 "$BIN/dcpiexport" -db "$T/db" -epoch all -format llvm -o "$T/p.txt" work-icall 2>"$T/export.err" ||
    { echo "FAIL: dcpiexport: $(cat "$T/export.err")"; exit 1; }
grep -q "no vp-calls" "$T/export.err" && fail "the export saw no vp-calls data: $(cat "$T/export.err")"
llvm-profdata merge -sample "$T/p.txt" -o "$T/p.prof" 2>"$T/merge.err" || fail "llvm-profdata merge: $(head -3 "$T/merge.err")"
llvm-profdata show -sample "$T/p.prof" >"$T/show.txt" 2>&1 || fail "llvm-profdata show: $(head -3 "$T/show.txt")"
grep -q "^Function: hot_loop: " "$T/show.txt" || fail "llvm-profdata shows no hot_loop: $(head -5 "$T/show.txt")"

# the hottest body line of the whole profile: hot_loop's loop line (offset from its declaration)
awk '/^[^ ]/ { split($0, h, ":"); fn = h[1]; next }
     { n = $2 + 0; if ($2 ~ /^[0-9]+$/ && n > best) { best = n; at = fn " " $1 } }
     END { print at, best }' "$T/p.txt" >"$T/hottest.txt"
read -r hfn hpos hcount <"$T/hottest.txt"
total=$(awk -F: '/^[^ ]/ { s += $2 } END { print s + 0 }' "$T/p.txt")
stat_min "PC samples exported" "$total" 1000 || fail "$(stat_min x "$total" 1000)"
[ "$hfn" = hot_loop ] && [ "${hpos%%[.:]*}" = $((HOT - D_HOT)) ] ||
    fail "hottest line: $hfn $hpos ($hcount of $total), expected hot_loop $((HOT - D_HOT))"
echo "ok: hottest line hot_loop ${hpos%:} ($hcount of $total samples), loop line $HOT - decl $D_HOT"

# the indirect call's targets: dispatch's body line at the call's offset
off=$((ICALL - D_DISPATCH))
tline=$(awk -v off="$off" '/^[^ ]/ { split($0, h, ":"); fn = h[1]; next }
    fn == "dispatch" && /^ [0-9]/ { p = $1; sub(/[.:].*/, "", p); if (p == off && /icall_t/) { print; exit } }' "$T/p.txt")
[ -n "$tline" ] || fail "no targets at dispatch's line offset $off: $(grep -A6 '^dispatch' "$T/p.txt")"
sum=0
for t in icall_t0 icall_t1 icall_t2; do
    c=$(echo "$tline" | tr ' ' '\n' | awk -F: -v t=$t '$1 == t { print $2 }')
    eval "c_$t=${c:-0}"
    sum=$((sum + ${c:-0}))
done
[ "$sum" -gt 0 ] || fail "targets: '$tline'"
# the shares of the counts; tolerance from the value samples behind them, plus the rounding of
# counts that share out the line's count
round=$(awk -v s="$sum" 'BEGIN { printf "%.2f", 0.05 + 150 / s }')
for tt in icall_t0:50 icall_t1:30 icall_t2:20; do
    t=${tt%%:*}
    eval "c=\$c_$t"
    share=$(awk -v c="$c" -v s="$sum" 'BEGIN { printf "%.1f", 100 * c / s }')
    STAT_ROUND=$round stat_share "target $t" "$share" "${tt#*:}" "$N_VALUES" || fail "target $t: $tline"
done

# the tail call's target at its line: icall_t2 alone (its count is the position's)
tt=$(awk -v off=$((TAIL - D_TAIL)) '/^[^ ]/ { split($0, h, ":"); fn = h[1]; next }
    fn == "tail_call" && /^ [0-9]/ { p = $1; sub(/[.:].*/, "", p); if (p == off) { print; exit } }' "$T/p.txt")
echo "$tt" | grep -Eq "^ *[0-9.]+: [0-9]+ icall_t2:[0-9]+$" ||
    fail "tail call at offset $((TAIL - D_TAIL)): '$tt', expected icall_t2 alone: $(grep -A4 '^tail_call' "$T/p.txt")"
echo "ok: the tail call through a pointer: '$tt' ($N_TAIL value samples)"

# inlining: scale()'s nested section under both callers, its body at its own offset
for caller in via_a via_b; do
    awk -v c="$caller" -v off=$((SCALE - D_SCALE)) '
        /^[^ ]/ { split($0, h, ":"); in_c = h[1] == c; nested = 0; next }
        in_c && /^ [0-9.]+: scale:[0-9]+$/ { nested = 1; next }
        in_c && nested && /^  [0-9]/ { p = $1; sub(/[.:].*/, "", p); if (p == off) found = 1 }
        in_c && /^ [^ ]/ && !/scale:/ { nested = 0 }
        END { exit !found }' "$T/p.txt" ||
        fail "no scale section with offset $((SCALE - D_SCALE)) under $caller: $(grep -A8 "^$caller:" "$T/p.txt")"
done
echo "ok: scale() nested under via_a and via_b"

# clang takes it and promotes the indirect call to its most frequent target
# shellcheck disable=SC2086
clang $CFLAGS_P -fprofile-sample-use="$T/p.prof" -S -emit-llvm "$W" -o "$T/w.ll" 2>"$T/clang.err" ||
    fail "clang -fprofile-sample-use: $(head -3 "$T/clang.err")"
grep -q "icmp eq .*@icall_t0" "$T/w.ll" ||
    fail "clang did not promote the indirect call to icall_t0: $(grep -c icmp "$T/w.ll") icmp in the IR"
echo "ok: clang promoted the indirect call (icmp eq against @icall_t0)"

# -o -: the same text on standard output
to 60 "$BIN/dcpiexport" -db "$T/db" -epoch all -format llvm -o - work-icall 2>/dev/null | cmp -s - "$T/p.txt" ||
    fail "-o - differs from -o FILE"

# -counts blocks: a line counts its block's executions (dcpicalc's estimator within a function):
# llvm-profdata and clang take it, and the inner loop's for line (its increment and compare,
# in the loop's block after rotation: no samples of their own) counts what the body line counts
to 60 "$BIN/dcpiexport" -db "$T/db" -epoch all -format llvm -counts blocks -o "$T/pb.txt" work-icall \
    2>"$T/exportb.err" || fail "dcpiexport -counts blocks: $(cat "$T/exportb.err")"
llvm-profdata merge -sample "$T/pb.txt" -o "$T/pb.prof" 2>"$T/mergeb.err" ||
    fail "llvm-profdata merge -counts blocks: $(head -3 "$T/mergeb.err")"
lc() { # FILE OFFSET: the largest count of hot_loop's body lines at OFFSET (any discriminator)
    awk -v off="$2" '/^[^ ]/ { split($0, h, ":"); fn = h[1]; next }
        fn == "hot_loop" && /^ [0-9]/ { p = $1; sub(/[.:].*/, "", p); if (p == off && $2 + 0 > m) m = $2 + 0 }
        END { print m + 0 }' "$1"
}
body=$(lc "$T/pb.txt" $((HOT - D_HOT))) ctl=$(lc "$T/pb.txt" $((HOT - 1 - D_HOT)))
[ "$body" -gt 0 ] && [ "$ctl" = "$body" ] ||
    fail "-counts blocks: hot_loop's for line $ctl, body line $body: $(grep -A5 '^hot_loop' "$T/pb.txt")"
echo "ok: -counts blocks: hot_loop's for line and body line both $body (samples: $(lc "$T/p.txt" $((HOT - 1 - D_HOT))) and $(lc "$T/p.txt" $((HOT - D_HOT))))"
# shellcheck disable=SC2086
clang $CFLAGS_P -fprofile-sample-use="$T/pb.prof" -c "$W" -o "$T/wb.o" 2>"$T/clangb.err" ||
    fail "clang -fprofile-sample-use (blocks): $(head -3 "$T/clangb.err")"
to 60 "$BIN/dcpiexport" -db "$T/db" -format llvm -counts often -o - work-icall >/dev/null 2>"$T/bad.err"
[ $? = 2 ] && grep -q "^dcpiexport: -counts often: use samples or blocks$" "$T/bad.err" ||
    fail "-counts often: $(cat "$T/bad.err")"
to 60 "$BIN/dcpiexport" -db "$T/db" -format pprof -counts blocks -o "$T/x.pb" work-icall 2>"$T/bad.err"
[ $? = 2 ] && [ ! -e "$T/x.pb" ] || fail "-counts with -format pprof: $(cat "$T/bad.err")"

# without vp-calls data: the export works, says once that call sites carry no indirect targets
to 60 "$BIN/dcpid" -db "$T/db0" -- "$T/work-icall" "$(stat_ms 1000)" >/dev/null 2>"$T/run0.err" ||
    fail "dcpid (PC only): $(tail -2 "$T/run0.err")"
to 60 "$BIN/dcpiexport" -db "$T/db0" -format llvm -o "$T/p0.txt" work-icall 2>"$T/export0.err" ||
    fail "export without vp-calls: $(cat "$T/export0.err")"
[ "$(grep -c 'no vp-calls value samples' "$T/export0.err")" = 1 ] ||
    fail "without vp-calls data, said: $(cat "$T/export0.err")"
awk '/^[^ ]/ { split($0, h, ":"); fn = h[1]; next } fn == "dispatch" && /icall_t/ { f = 1 } END { exit !f }' "$T/p0.txt" &&
    fail "indirect targets without vp-calls data: $(grep -A4 '^dispatch' "$T/p0.txt")"
grep -q "^hot_loop:" "$T/p0.txt" || fail "no hot_loop without vp-calls: $(head -3 "$T/p0.txt")"

# an image without DWARF: its functions, every sample at offset 0, said once
clang -O2 "$W" -o "$T/work-nodwarf" || fail "clang (no -g)"
to 60 "$BIN/dcpid" -db "$T/db1" -- "$T/work-nodwarf" "$(stat_ms 1000)" >/dev/null 2>"$T/run1.err" ||
    fail "dcpid (no DWARF): $(tail -2 "$T/run1.err")"
to 60 "$BIN/dcpiexport" -db "$T/db1" -format llvm -o "$T/p1.txt" work-nodwarf 2>"$T/export1.err" ||
    fail "export of an image without DWARF: $(cat "$T/export1.err")"
[ "$(grep -c 'work-nodwarf: no DWARF' "$T/export1.err")" = 1 ] ||
    fail "no DWARF said $(grep -c 'no DWARF' "$T/export1.err") times: $(cat "$T/export1.err")"
grep -q "^hot_loop:" "$T/p1.txt" || fail "no hot_loop from the symbols: $(head -3 "$T/p1.txt")"
awk '/^ / && $1 != "0:" { bad = 1 } END { exit bad }' "$T/p1.txt" ||
    fail "a body line not at offset 0 without DWARF: $(grep -v '^ 0:' "$T/p1.txt" | head -3)"

# an empty selection is an error, not an empty file
to 60 "$BIN/dcpiexport" -db "$T/db0" -format llvm -o "$T/none.txt" no-such-image 2>"$T/none.err" &&
    fail "an empty selection exited 0"
[ "$(wc -l <"$T/none.err")" = 1 ] || fail "empty selection: $(cat "$T/none.err")"
[ -e "$T/none.txt" ] && fail "an empty selection wrote $T/none.txt"
to 60 "$BIN/dcpiexport" -db "$T/db0" -format llvm -comm no-such-command -o "$T/none.txt" 2>"$T/none2.err" &&
    fail "-comm matching nothing exited 0"
[ -e "$T/none.txt" ] && fail "-comm matching nothing wrote $T/none.txt"

[ "$fails" = 0 ] || exit 1
echo "PASS"

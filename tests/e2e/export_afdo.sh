#!/bin/bash
# e2e: dcpiexport -format afdo for gcc's -fauto-profile: samples/work-icall built with gcc -O2 -g
# and profiled with dcpid -vtrace vp-calls, its skewed mix (icall_t0 in 90% of the calls: gcc
# promotes an indirect call only when one target holds over 75% of its calls); gcc 12 reads the
# export without a diagnostic, attaches the targets to the call (its afdo dump's "Indirect call
# counter"), and promotes the call to icall_t0 (`== icall_t0` in the optimized tree), which the
# same compile without the profile does not do. The file's layout is checked field by field in
# tests/check_llvmprof.c.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
BIN=${DCPI_BIN:?}
SRC=${DCPI_SRC:?}
export LC_ALL=C HOME=${HOME:-/tmp}
e2e_require gcc build-essential
e2e_counting afdo
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "cpu-clock sampling"

cp "$SRC/samples/work-icall.c" "$T/w.c"
gcc -O2 -g "$T/w.c" -o "$T/work-icall" || { echo "FAIL: gcc"; exit 1; }
run() {
    e2e_after_epoch "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -vbudget 5 -vtrace vp-calls -- "$T/work-icall" "$1" skewed \
        >>"$T/run.out" 2>>"$T/run.err" || { echo "FAIL: dcpid: $(tail -3 "$T/run.err")"; return 1; }
}
count() {
    local l
    l=$(to 60 "$BIN/dcpilist" -db "$T/db" -epoch all -asm -vprof -vtrace vp-calls dispatch \
        "$T/work-icall" 2>&1 | grep -m1 "call.*target:")
    [ -n "$l" ] && vtot "$l" || echo 0
}
stat_topup 400 "$(stat_ms 3000)" run count || exit 1 # dispatch is ~5% of the time: ~70 value samples a second
stat_min "value samples at the indirect call" "$STAT_N" 400 || fail "$(stat_min x "$STAT_N" 400)"

to 60 "$BIN/dcpiexport" -db "$T/db" -epoch all -format afdo -o "$T/w.afdo" work-icall 2>"$T/export.err" ||
    { echo "FAIL: dcpiexport: $(cat "$T/export.err")"; exit 1; }
head -c 4 "$T/w.afdo" | od -An -tx1 | grep -q "61 64 63 67" || fail "no gcov magic: $(od -An -tx1 "$T/w.afdo" | head -1)"
(cd "$T" && gcc -O2 -g -fauto-profile=w.afdo -fdump-ipa-afdo -fdump-tree-optimized -c w.c -o with.o) \
    >"$T/gcc.err" 2>&1 || fail "gcc -fauto-profile: $(head -3 "$T/gcc.err")"
[ -s "$T/gcc.err" ] && fail "gcc -fauto-profile said: $(head -3 "$T/gcc.err")"
grep -q "Indirect call counter all: [1-9]" "$T"/with.c.*afdo ||
    fail "gcc attached no targets to the indirect call: $(grep -i indirect "$T"/with.c.*afdo | head -3)"
grep -q "== icall_t0" "$T"/with.c.*optimized || fail "gcc did not promote the indirect call to icall_t0"
(cd "$T" && gcc -O2 -g -fdump-tree-optimized -c w.c -o without.o) || fail "gcc without a profile"
grep -q "== icall_t0" "$T"/without.c.*optimized && fail "gcc promotes icall_t0 without the profile too: the check proves nothing"
[ "$fails" = 0 ] || exit 1
echo "ok: gcc -fauto-profile read dcpi's profile and promoted the indirect call to icall_t0"
echo "PASS"

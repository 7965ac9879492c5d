#!/bin/bash
# e2e: dcpiprof on a synthetic database written by this script (no dcpid): a small program with
# two known functions and a 64-byte gap that belongs to no function, profiles written byte by
# byte with printf, then every output figure is checked against the counts put in.
#
# Epoch 202401020000 (latest):
#   p1/prog_<id>/cpu-clock.prof   alpha 300+100 (two offsets), beta 200, gap 100, lost 3
#   p1/prog_<id>/task-clock.prof  beta 10
#   p1/unknown@p1/cpu-clock.prof  50 samples outside every image
#   p1/_kernel.kallsyms__<kid>/   cpu-clock.prof 50 samples in do_work, plus a kallsyms file
#   p2/prog_<id>/cpu-clock.prof   alpha 100, beta 100, lost 4 (merged with p1's)
# => cpu-clock total 1000: alpha 500 (50%), beta 300 (30%), unknown_rou of prog 100 (10%),
#    do_work 50 (5%), unknown_rou of unknown@p1 50 (5%).
# Epoch 202401010000 (latest-1): one profile with no samples.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting prof
PROF=$B/dcpiprof

e2e_require gcc build-essential
e2e_require readelf binutils
e2e_require nm binutils

# ---- the profiled program ----
cat >"$T/prog.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }
__asm__(".text\n.globl gap_here\ngap_here:\n.skip 64, 0xcc\n");
__attribute__((noinline)) int beta(int x) { return x ^ 5; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", alpha(argc) + beta(argc)); return 0; }
EOF
gcc -O1 -g -fno-toplevel-reorder -Wl,--build-id -o "$T/prog" "$T/prog.c"
PROG=$T/prog
addr() { nm "$PROG" | awk -v s="$1" '$3 == s {print "0x" $1}'; }
ALPHA=$(addr alpha)
BETA=$(addr beta)
GAP=$(addr gap_here)
ALPHA_END=$((ALPHA + 0x$(nm -S "$PROG" | awk '$4 == "alpha" {print $2}')))
TSTART=$(readelf -lW "$PROG" | awk '$1 == "LOAD" && $0 ~ / R?W?E / {print $3}' | sort | head -1)
ID=$(readelf -n "$PROG" | awk '/Build ID:/ {print $3}')
[ -n "$ALPHA" ] && [ -n "$BETA" ] && [ -n "$GAP" ] && [ -n "$TSTART" ] && [ -n "$ID" ] ||
    { echo "FAIL: cannot read alpha/beta/gap/tstart/build-id of $PROG"; exit 1; }
[ $((GAP)) -ge $((ALPHA_END)) ] && [ $((GAP + 64)) -le $((BETA)) ] ||
    { echo "FAIL: the gap is not between alpha and beta (compiler reordered?)"; exit 1; }
OA=$((ALPHA - TSTART))
OB=$((BETA - TSTART))
OG=$((GAP + 8 - TSTART))
echo "prog: tstart $TSTART id $ID alpha +$OA beta +$OB gap +$OG"

# ---- a profile writer: e2e_mkprof (lib/common.sh) ----
mkprof() { e2e_mkprof "$@"; }

DB=$T/db
E=202401020000
IMG=prog_$ID
KID=00112233445566778899aabbccddeeff00112233
KDIR=$DB/$E/p1/_kernel.kallsyms__$KID
mkprof "$DB/$E/p1/$IMG/cpu-clock.prof" "$ID" $E p1 cpu-clock "$TSTART" "$PROG" 3 \
    $OA:300 $((OA + 1)):100 $OG:100 $OB:200
mkprof "$DB/$E/p1/$IMG/task-clock.prof" "$ID" $E p1 task-clock "$TSTART" "$PROG" 0 $OB:10
mkprof "$DB/$E/p1/unknown@p1/cpu-clock.prof" 0 $E p1 cpu-clock 0 unknown 0 4096:50
mkprof "$KDIR/cpu-clock.prof" $KID $E p1 cpu-clock ffffffff81000000 '[kernel.kallsyms]' 0 \
    $((0x150)):50
printf 'ffffffff81000000 T startup_64\nffffffff81000100 T do_work\nffffffff81000200 t other\n' \
    >"$KDIR/kallsyms"
mkprof "$DB/$E/p2/$IMG/cpu-clock.prof" "$ID" $E p2 cpu-clock "$TSTART" "$PROG" 4 $OA:100 $OB:100
mkprof "$DB/202401010000/p1/$IMG/cpu-clock.prof" "$ID" 202401010000 p1 cpu-clock "$TSTART" \
    "$PROG" 0

# run NAME ARGS...: stdout to $T/NAME.out, stderr to $T/NAME.err, status to $rc
run() {
    local name=$1
    shift
    rc=0
    "$PROF" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}
row() { awk -v p="$2" '$4 == p' "$T/$1.out" | head -1; }
expect_line() { # NAME LINE-REGEX WHAT
    grep -Eq -- "$2" "$T/$1.out" && return
    fail "$3"
    echo "--- $1 output:"
    cat "$T/$1.out" "$T/$1.err"
}

# ---- default: by procedure ----
run def -db "$DB"
[ $rc -eq 0 ] || fail "default run exited $rc: $(cat "$T/def.err")"
cat "$T/def.out"
expect_line def '^Column +Total +Period +Lost$' "no summary header line"
expect_line def '^cpu-clock +1000 +1000000 +7$' \
    "cpu-clock summary is not total 1000, period 1000000, lost 3+4"
expect_line def '^task-clock +10 +1000000 +0$' "task-clock summary is not total 10"
grep -q '^warning:' "$T/def.out" && fail "a loss of 0.7% warned: $(grep '^warning' "$T/def.out")"
# a loss over 1% is a warning line, not only a number
mkprof "$T/lossy/$E/p1/$IMG/cpu-clock.prof" "$ID" $E p1 cpu-clock "$TSTART" "$PROG" 250 $OA:750
run lossy -db "$T/lossy"
expect_line lossy '^warning: cpu-clock lost 25\.0% of its samples \(250 of 1000\): the shares below are of the samples kept$' \
    "no warning for a 25% loss"
first=$(awk '/procedure/ {getline; print; exit}' "$T/def.out")
echo "$first" | grep -Eq "^ +500 +50\.00% +50\.00% +0 +0\.00% +0\.00% +alpha +$PROG$" ||
    fail "first row is not alpha with 500 samples, 50.00% (p1+p2 merged): '$first'"
second=$(awk '/procedure/ {getline; getline; print; exit}' "$T/def.out")
echo "$second" | grep -Eq "^ +300 +30\.00% +80\.00% +10 +100\.00% +100\.00% +beta +$PROG$" ||
    fail "second row is not beta 300 30.00% 80.00% / task-clock 10: '$second'"
expect_line def "^ +100 +10\.00% +90\.00% .* unknown_rou +$PROG$" \
    "gap samples are not unknown_rou of prog (10%)"
expect_line def '^ +50 +5\.00% +95\.00% .* do_work +\[kernel\.kallsyms\]$' \
    "kernel samples not named do_work through kallsyms"
expect_line def '^ +50 +5\.00% +100\.00% .* unknown_rou +unknown@p1$' "unknown@p1 samples missing"
[ "$(grep -c . "$T/def.err" || true)" -eq 0 ] || fail "unexpected stderr: $(cat "$T/def.err")"

# ---- the kernel's symbols as dcpid writes them now: kallsyms.gz, gzip (the plain kallsyms above
# is what a database written before has): the same output; a corrupt one is one line naming it
gzip -c "$KDIR/kallsyms" >"$KDIR/kallsyms.gz"
mv "$KDIR/kallsyms" "$T/kallsyms.plain"
run gz -db "$DB"
cmp -s "$T/def.out" "$T/gz.out" || fail "kallsyms.gz: not the output of kallsyms: $(diff "$T/def.out" "$T/gz.out")"
[ "$(grep -c . "$T/gz.err" || true)" -eq 0 ] || fail "kallsyms.gz: stderr: $(cat "$T/gz.err")"
{ printf '\037\213\007\000\000\000\000\000\000\003'; head -c 40 /dev/zero; } >"$KDIR/kallsyms.gz"
run gzbad -db "$DB"
[ $rc -eq 3 ] || fail "a corrupt kallsyms.gz: exit $rc (want 3: damaged data skipped): $(cat "$T/gzbad.err")"
[ "$(cat "$T/gzbad.err")" = "dcpiprof: $KDIR/kallsyms.gz: corrupt gzip data (unknown compression method); its samples are shown as unknown_rou" ] ||
    fail "a corrupt kallsyms.gz: stderr '$(cat "$T/gzbad.err")'"
expect_line gzbad '^ +50 +5\.00% .* unknown_rou +\[kernel\.kallsyms\]$' "a corrupt kallsyms.gz: kernel row"
rm "$KDIR/kallsyms.gz"
mv "$T/kallsyms.plain" "$KDIR/kallsyms"

# ---- -s: sort by the other event; -no_header ----
run s -db "$DB" -s task-clock -no_header
first=$(head -1 "$T/s.out")
echo "$first" | grep -Eq '^task-clock +% +cum% +cpu-clock +% +cum% +procedure +image$' ||
    fail "-s task-clock: the task-clock group is not first or the summary is printed: '$first'"
sed -n 2p "$T/s.out" | grep -Eq '^ +10 +100\.00% +100\.00% +300 +30\.00% +30\.00% +beta ' ||
    fail "-s task-clock: beta is not first: $(sed -n 2p "$T/s.out")"
run s2 -db "$DB" -s no-such-event
[ $rc -eq 1 ] && grep -q "no-such-event" "$T/s2.err" ||
    fail "-s with an absent event: exit $rc, '$(cat "$T/s2.err")'"

# ---- -i: by image ----
run i -db "$DB" -i -no_header
cat "$T/i.out"
sed -n 2p "$T/i.out" | grep -Eq "^ +900 +90\.00% +90\.00% +10 +100\.00% +100\.00% +$PROG$" ||
    fail "-i: first row is not the program with 900 samples: $(sed -n 2p "$T/i.out")"
sed -n 3p "$T/i.out" | grep -Eq '^ +50 +5\.00% +95\.00% .*\[kernel\.kallsyms\]$' ||
    fail "-i: kernel row"
sed -n 4p "$T/i.out" | grep -Eq '^ +50 +5\.00% +100\.00% .*unknown@p1$' || fail "-i: unknown@p1 row"
[ "$(wc -l <"$T/i.out")" -eq 4 ] || fail "-i: expected 3 rows"

# ---- -keep: stop at the row that crosses the percentage ----
run keep -db "$DB" -no_header -keep 60
[ "$(wc -l <"$T/keep.out")" -eq 3 ] ||
    fail "-keep 60: expected header + alpha + beta, got: $(cat "$T/keep.out")"
run keep2 -db "$DB" -keep 150
[ $rc -eq 2 ] || fail "-keep 150 exited $rc, expected 2"

# ---- -csl ----
run csl -db "$DB" -csl
CSL_HEAD=cpu-clock,cpu-clock%,cpu-clockcum%,task-clock,task-clock%,task-clockcum%,procedure,image
[ "$(head -1 "$T/csl.out")" = "$CSL_HEAD" ] ||
    fail "-csl header: $(head -1 "$T/csl.out")"
[ "$(sed -n 2p "$T/csl.out")" = "500,50.00,50.00,0,0.00,0.00,alpha,$PROG" ] ||
    fail "-csl row: $(sed -n 2p "$T/csl.out")"
[ "$(wc -l <"$T/csl.out")" -eq 6 ] || fail "-csl: expected 1 + 5 lines"

# ---- image names; -platform ----
run name -db "$DB" -no_header prog
sed -n 2p "$T/name.out" | grep -Eq '^ +500 +55\.56% +55\.56% .* alpha ' ||
    fail "image name 'prog': alpha is not 500/900 = 55.56%: $(sed -n 2p "$T/name.out")"
grep -q kallsyms "$T/name.out" && fail "image name 'prog': kernel rows not filtered out"
run name2 -db "$DB" nothing-like-this
[ $rc -eq 1 ] && grep -q "nothing-like-this" "$T/name2.err" || fail "unmatched image name: exit $rc"
run plat -db "$DB" -platform p2 -no_header
sed -n 2p "$T/plat.out" | grep -Eq '^ +100 +50\.00% +50\.00% +alpha ' ||
    fail "-platform p2: alpha is not 100 (50%): $(sed -n 2p "$T/plat.out")"

# ---- an image that changed since it was profiled ----
DB2=$T/db2
mkprof "$DB2/$E/p1/prog_deadbeef/cpu-clock.prof" deadbeef $E p1 cpu-clock "$TSTART" "$PROG" 0 $OA:7
run changed -db "$DB2" -no_header
WARN="dcpiprof: $PROG changed since it was profiled (id $ID, profile deadbeef);"
WARN+=" its samples are shown as unknown_rou"
grep -qxF "$WARN" "$T/changed.err" ||
    fail "no 'changed since it was profiled' warning: $(cat "$T/changed.err")"
sed -n 2p "$T/changed.out" | grep -Eq '^ +7 +100\.00% +100\.00% +unknown_rou ' ||
    fail "changed image rows: $(cat "$T/changed.out")"

# ---- zero samples, epochs ----
run zero -db "$DB" -epoch latest-1
[ $rc -eq 0 ] && grep -qx "no samples" "$T/zero.err" && grep -Eq '^cpu-clock +0 ' "$T/zero.out" ||
    fail "zero-sample epoch: exit $rc, stderr '$(cat "$T/zero.err")'"
run ep -db "$DB" -epoch 202401020000 -no_header
[ $rc -eq 0 ] && sed -n 2p "$T/ep.out" | grep -q alpha || fail "-epoch by name"

# ---- errors ----
run bad -db "$DB" -x
[ $rc -eq 2 ] && [ "$(cat "$T/bad.err")" = "dcpiprof: unknown flag '-x' (try -h)" ] ||
    fail "unknown flag: exit $rc"
run nodb -db "$T/nope"
[ $rc -eq 1 ] && [ "$(wc -l <"$T/nodb.err")" -eq 1 ] ||
    fail "missing db: exit $rc, '$(cat "$T/nodb.err")'"
run ver -V
[ "$(cat "$T/ver.out")" = "dcpiprof (dcpi) 0.1.0" ] || fail "-V: $(cat "$T/ver.out")"
run help -h
[ $rc -eq 0 ] && grep -q -- "-keep PCT" "$T/help.out" || fail "-h"
BADF=$DB/$E/p2/$IMG/cpu-clock.prof
head -c -4 "$BADF" >"$T/cut" && cp "$T/cut" "$BADF" # drop half the footer
run corrupt -db "$DB"
[ $rc -eq 3 ] && [ "$(wc -l <"$T/corrupt.err")" -eq 1 ] &&
    grep -q "^dcpiprof: $BADF: .*; skipped$" "$T/corrupt.err" ||
    fail "corrupt profile: exit $rc (want 3), stderr '$(cat "$T/corrupt.err")'"
grep -Eq ' alpha +[^ ]*/prog$' "$T/corrupt.out" || fail "corrupt profile: the other platform's rows are not printed"
echo "corrupt profile: $(cat "$T/corrupt.err")"
run corrupt_strict -db "$DB" -strict
[ $rc -eq 1 ] && [ "$(wc -l <"$T/corrupt_strict.err")" -eq 1 ] && [ ! -s "$T/corrupt_strict.out" ] &&
    grep -q "^dcpiprof: $BADF: " "$T/corrupt_strict.err" ||
    fail "corrupt profile, -strict: exit $rc (want 1), stderr '$(cat "$T/corrupt_strict.err")'"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all dcpiprof checks passed"

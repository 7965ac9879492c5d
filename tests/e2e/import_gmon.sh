#!/bin/bash
# e2e: gmon.out in and out. A gcc -pg program writes gmon.out; dcpiimport -format gmon turns it
# into an epoch whose dcpiprof counts equal gprof -b -p's self seconds x the profiling rate;
# dcpiexport -format gmon writes it back and gprof reads the same flat profile from the export.
# Malformed files (magic, version, truncation, histogram out of the program's text) give one
# line, exit 1 and no epoch.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting gmon
e2e_require gcc build-essential
e2e_require gprof binutils

cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) double hot(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
__attribute__((noinline)) double warm(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 + 1; return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 300000000;
    printf("%g\n", hot(n) + warm(n / 2));
    return 0;
}
C
gcc -O1 -pg -o "$T/prog" "$T/prog.c"
(cd "$T" && ./prog >/dev/null)
[ -s "$T/gmon.out" ] || { echo "SKIP: the -pg program wrote no gmon.out"; exit 77; }
gprof -b -p "$T/prog" "$T/gmon.out" >"$T/gprof.txt" 2>/dev/null || fail "gprof failed"
rate=$(awk '/Each sample counts as/ {printf "%d\n", 1 / $5 + 0.5}' "$T/gprof.txt")
echo "rate: $rate samples/s"

"$B/dcpiimport" -db "$T/db" -platform p1 -format gmon -image "$T/prog" "$T/gmon.out" >/dev/null ||
    fail "dcpiimport failed"
"$B/dcpiprof" -db "$T/db" -csl >"$T/dcpi.csv" || fail "dcpiprof failed"
for f in hot warm; do
    g=$(awk -v f=$f -v r="$rate" '$NF == f {printf "%d\n", $3 * r + 0.5}' "$T/gprof.txt")
    d=$(awk -F, -v f=$f '$4 == f {print $1}' "$T/dcpi.csv")
    echo "$f: gprof ${g:-0} samples, dcpi ${d:-0}"
    [ -n "$g" ] && [ "$g" = "$d" ] || fail "$f: gprof says ${g:-nothing}, dcpiprof ${d:-nothing}"
done
[ "$(awk -F, 'NR == 2 {print $4}' "$T/dcpi.csv")" = hot ] || fail "top function is not hot"

# ---- export back: gprof reads the same flat profile ----
"$B/dcpiexport" -db "$T/db" -format gmon -o "$T/gmon.ex" prog || fail "dcpiexport failed"
gprof -b -p "$T/prog" "$T/gmon.ex" >"$T/gprof2.txt" 2>/dev/null || fail "gprof on the export"
flat() { awk '$NF == "hot" || $NF == "warm" {print $3, $NF}' "$1"; }
echo "exported: $(flat "$T/gprof2.txt" | tr '\n' ';')"
[ "$(flat "$T/gprof.txt")" = "$(flat "$T/gprof2.txt")" ] && [ -n "$(flat "$T/gprof2.txt")" ] ||
    fail "gprof on the export: $(flat "$T/gprof2.txt") vs original $(flat "$T/gprof.txt")"

# ---- malformed files ----
epochs() { ls "$T/db" | grep -c '^[0-9]' || true; }
before=$(epochs)
check_bad() { # NAME FILE EXPECTED-REASON
    local rc=0
    "$B/dcpiimport" -db "$T/db" -platform p1 -format gmon -image "$T/prog" "$2" >/dev/null \
        2>"$T/err" || rc=$?
    echo "$1: $(cat "$T/err")"
    [ $rc -eq 1 ] || fail "$1: exit $rc, want 1"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$1: not one line"
    grep -q "^dcpiimport: $2: .*$3" "$T/err" || fail "$1: message"
    [ "$(epochs)" = "$before" ] || fail "$1: an epoch was created"
    ls -a "$T/db" | grep -q dcpiimport && fail "$1: temporary directory left behind"
    return 0
}
cp "$T/gmon.out" "$T/magic.out"
printf 'GMON' | dd of="$T/magic.out" bs=1 conv=notrunc 2>/dev/null
check_bad magic "$T/magic.out" 'no "gmon" magic'
cp "$T/gmon.out" "$T/ver.out"
printf '\x07' | dd of="$T/ver.out" bs=1 seek=4 conv=notrunc 2>/dev/null
check_bad version "$T/ver.out" "gmon version 7"
head -c 100 "$T/gmon.out" >"$T/trunc.out"
check_bad truncated "$T/trunc.out" "truncated histogram"
# move the histogram 1 MiB up: its samples fall outside the program's text
cp "$T/gmon.out" "$T/range.out"
# (the header's low_pc and high_pc: two little-endian 64-bit words at offset 21)
le64() { local i; for i in 0 1 2 3 4 5 6 7; do printf "\\x%02x" $((($1 >> (8 * i)) & 255)); done; }
read -r lo hi < <(od -An -t u8 -j 21 -N 16 "$T/range.out")
printf "$(le64 $((lo + 0x100000)))$(le64 $((hi + 0x100000)))" |
    dd of="$T/range.out" bs=1 seek=21 conv=notrunc 2>/dev/null
check_bad range "$T/range.out" "histogram out of range"
[ $fails -eq 0 ] && echo "PASS" || exit 1

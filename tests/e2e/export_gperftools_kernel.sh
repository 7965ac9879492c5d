#!/bin/bash
# e2e: dcpiexport -format gperftools of a run with kernel samples, checked with google-pprof
# itself. google-pprof reads addresses as signed and drops those above 0x7fffffffffffffff, so
# kernel addresses (0xffffffff8...) are written below 2^63 (docs/dcpiexport.md): its Total is
# the sum of its rows and equals dcpiprof's total; with -symbols every function google-pprof
# lists (the kernel's included) has dcpiprof's count. Skips (77) without cpu-clock.
set -u
export LC_ALL=C
B=${DCPI_BIN:?}
BIN=$B
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting expgk
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require gcc build-essential
e2e_require google-pprof google-perftools

cat >"$T/k.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
__attribute__((noinline)) long spin(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10, fd = open("/dev/null", O_WRONLY);
    char b[64] = {0};
    long t = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 60000; i++) t += write(fd, b, sizeof b);
        t += spin(8000000);
    }
    printf("%ld\n", t);
    return 0;
}
C
gcc -O1 -g -o "$T/k" "$T/k.c" || { echo "FAIL: gcc"; exit 1; }
# at least 20 kernel samples (write(2) is most of the run): more rounds until there are
rounds=10 kern=0
for try in 1 2 3; do
    rm -rf "$T/db"
    to 120 "$B/dcpid" -db "$T/db" -e cpu-clock -- "$T/k" $rounds >/dev/null 2>"$T/err" ||
        { echo "FAIL: dcpid: $(cat "$T/err")"; exit 1; }
    kern=$("$B/dcpiprof" -db "$T/db" -i | awk '$NF == "[kernel.kallsyms]" {print $1}')
    [ "${kern:-0}" -ge 20 ] && break
    rounds=$((rounds * 3))
done
[ "${kern:-0}" -ge 20 ] || { echo "FAIL: fewer than 20 kernel samples after 3 runs ($kern)"; exit 1; }

"$B/dcpiprof" -db "$T/db" -csl >"$T/dcpi.csv" || fail "dcpiprof -csl"
mine=$(awk -F, 'NR > 1 {t += $1} END {print t + 0}' "$T/dcpi.csv")
for sym in "" -symbols; do
    "$B/dcpiexport" -db "$T/db" -format gperftools $sym -o "$T/out$sym.prof" || fail "dcpiexport $sym"
    if [ -n "$sym" ]; then
        google-pprof --text "$T/out$sym.prof" >"$T/pprof$sym.txt" 2>"$T/pprof.err"
    else
        google-pprof --text "$T/k" "$T/out$sym.prof" >"$T/pprof$sym.txt" 2>"$T/pprof.err"
    fi || fail "google-pprof $sym: $(head -3 "$T/pprof.err")"
    total=$(awk '/^Total:/ {print $2}' "$T/pprof$sym.txt")
    rows=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ {t += $1} END {print t + 0}' "$T/pprof$sym.txt")
    echo "gperftools$sym: google-pprof Total $total, its rows $rows, dcpiprof $mine (kernel $kern)"
    [ "$total" = "$mine" ] && [ "$rows" = "$mine" ] ||
        fail "$sym: google-pprof Total $total, rows $rows, dcpiprof $mine"
done
# -symbols: each function google-pprof lists has dcpiprof's count (names dcpiprof lists once)
checked=0
while read -r count name; do
    n=$(awk -F, -v p="$name" '$4 == p || $4 == "\"" p "\"" {c++; s = $1} END {print c + 0, s + 0}' "$T/dcpi.csv")
    [ "${n%% *}" = 1 ] || continue
    [ "${n##* }" = "$count" ] || fail "$name: google-pprof $count, dcpiprof ${n##* }"
    checked=$((checked + 1))
done < <(awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ {print $1, $6}' "$T/pprof-symbols.txt")
grep -q ' do_syscall_64$\| entry_SYSCALL_64\| ksys_write$\| vfs_write$' "$T/pprof-symbols.txt" ||
    fail "no kernel function named in google-pprof's rows: $(head -8 "$T/pprof-symbols.txt")"
[ "$checked" -ge 3 ] || fail "only $checked functions compared"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: google-pprof's Total = its rows = dcpiprof's $mine, kernel samples included; $checked functions agree"

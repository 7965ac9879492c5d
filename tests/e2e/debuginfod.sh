#!/bin/bash
# debuginfod.sh - a stripped program's functions are named from a debuginfod server (issue 13:
# "debug files ... through debuginfod"). A program whose alpha and beta run 2:1 in CPU time is
# built with -g, its unstripped copy served by a local debuginfod (127.0.0.1, a free port, a
# private cache), and the stripped binary (no .symtab, no DWARF: nothing in it names alpha or
# beta) is profiled. Without DEBUGINFOD_URLS dcpiprof names neither; with it, dcpiprof names
# both with alpha's share of the two within the binomial tolerance of 2/3, dcpilist -asm alpha
# lists alpha with dcpiprof's count and -source shows its line (libdw's client, same cache).
# dcpid itself never asks the server. With the server gone the run is no error: names are
# missing and stderr says so once. The truth is CPU time, so the machine's speed does not matter.
# dcpiprof is given the program's image only (other stripped images, libc without libc6-dbg,
# would be asked for too). Then the program is rebuilt: the profile is still named through the
# debug file of the build-id profiled (dcpid's symbol cache of a stripped file names only
# .eh_frame ranges). Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-debuginfod.XXXXXX)
SRV_PID=
cleanup() {
    [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require gcc build-essential
e2e_require debuginfod debuginfod
e2e_require debuginfod-find debuginfod
PATH=$PATH:/usr/sbin:/sbin ldconfig -p | grep -q 'libdebuginfod\.so\.1 ' ||
    fail "libdebuginfod.so.1 is not installed (Debian package libdebuginfod1, installed by make test-deps)"
unset DEBUGINFOD_URLS
export DEBUGINFOD_CACHE_PATH=$T/cache DEBUGINFOD_TIMEOUT=20

# alpha and beta: the same loop (not merged: -fno-ipa-icf), each run until it has used its CPU
# time, 2:1 (process CPU time, which is what cpu-clock samples)
cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
__attribute__((noinline)) long alpha(double ms) {
    volatile long s = 0;
    for (double end = cpu_ms() + ms; cpu_ms() < end;)
        for (long i = 0; i < 20000; i++) s += i % 7;
    return s;
}
__attribute__((noinline)) long beta(double ms) {
    volatile long s = 0;
    for (double end = cpu_ms() + ms; cpu_ms() < end;)
        for (long i = 0; i < 20000; i++) s += i % 7;
    return s;
}
int main(int argc, char **argv) {
    double k = argc > 1 ? atof(argv[1]) : 1; /* the run's scale (stat_until) */
    printf("%ld\n", alpha(500 * k) + beta(250 * k));
    return 0;
}
C
mkdir "$T/srv"
gcc -O1 -g -fno-inline -fno-ipa-icf -o "$T/srv/prog" "$T/prog.c" || fail "gcc failed"
strip -s -o "$T/prog" "$T/srv/prog" || fail "strip failed"
id=$(readelf -n "$T/prog" | sed -n 's/.*Build ID: //p')
[ -n "$id" ] || fail "gcc made no build-id"
readelf -SW "$T/prog" | grep -Eq ' \.(symtab|debug_[a-z]+) ' && fail "strip -s left symbols or DWARF"
readelf -sW --dyn-syms "$T/prog" | grep -Eq ' (alpha|beta)$' && fail "alpha/beta in .dynsym"
strings -a "$T/prog" | grep -Eq '^(alpha|beta)$' && fail "the stripped binary names alpha or beta"

# a free port: debuginfod fails to start on a taken one, then another is tried
for try in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    debuginfod -p "$port" -d "$T/srv.sqlite" -F "$T/srv" >"$T/srv.log" 2>&1 &
    SRV_PID=$!
    for _ in $(seq 50); do
        grep -q 'started http server' "$T/srv.log" && break
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.1
    done
    grep -q 'started http server' "$T/srv.log" && kill -0 "$SRV_PID" 2>/dev/null && break
    kill "$SRV_PID" 2>/dev/null
    wait "$SRV_PID" 2>/dev/null
    SRV_PID=
done
[ -n "$SRV_PID" ] || fail "debuginfod did not start: $(tail -3 "$T/srv.log")"
URL=http://127.0.0.1:$port
# its first scan: poll with a throwaway cache (the client caches misses too)
for _ in $(seq 300); do
    rm -rf "$T/poll"
    DEBUGINFOD_CACHE_PATH=$T/poll DEBUGINFOD_URLS=$URL debuginfod-find debuginfo "$id" >/dev/null 2>&1 &&
        break
    sleep 0.1
done
[ -s "$T/poll/$id/debuginfo" ] || fail "debuginfod never served $id: $(tail -3 "$T/srv.log")"

# dcpid, even with DEBUGINFOD_URLS, fetches nothing
# (0.75 s of CPU; redone twice and four times as long until the program has 350 samples, for
# the 300 of alpha + beta asserted below: lib/stats.sh stat_until)
rows() { awk -v p="$T/prog" '$5 == p {print $4, $1}' "$1"; }
run() {
    rm -rf "$T/db"
    DEBUGINFOD_URLS=$URL to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$T/prog" "$1" >/dev/null 2>"$T/err" ||
        fail "dcpid failed: $(cat "$T/err")"
    [ ! -e "$T/cache/$id" ] || fail "dcpid asked debuginfod: $(ls -R "$T/cache")"
    "$BIN/dcpiprof" -db "$T/db" "$T/prog" >"$T/plain" 2>&1 || fail "dcpiprof failed: $(cat "$T/plain")"
}
count() { rows "$T/plain" | awk '{ s += $2 } END { print s + 0 }'; }
stat_until 350 4 run count
rows "$T/plain" | grep -Eq '^(alpha|beta) ' && fail "named without debuginfod: $(rows "$T/plain")"
[ -n "$(rows "$T/plain")" ] || fail "no samples in $T/prog: $(head -12 "$T/plain")"

export DEBUGINFOD_URLS=$URL
"$BIN/dcpiprof" -db "$T/db" "$T/prog" >"$T/named" 2>"$T/named.err" || fail "dcpiprof failed: $(cat "$T/named.err")"
[ -s "$T/named.err" ] && fail "dcpiprof with a working server wrote: $(cat "$T/named.err")"
a=$(rows "$T/named" | awk '$1 == "alpha" {print $2}')
b=$(rows "$T/named" | awk '$1 == "beta" {print $2}')
[ -n "$a" ] && [ -n "$b" ] || fail "alpha/beta not named with debuginfod: $(rows "$T/named")"
[ -s "$T/cache/$id/debuginfo" ] || fail "nothing in the cache: $(ls -R "$T/cache")"
n=$((a + b))
stat_min "alpha + beta samples" "$n" 300 || fail "too few samples"
share=$(awk -v a="$a" -v n="$n" 'BEGIN {printf "%.2f", 100 * a / n}')
stat_share "alpha's share of alpha + beta" "$share" 66.67 "$n" || fail "alpha's share is off"

"$BIN/dcpilist" -db "$T/db" -asm alpha "$T/prog" >"$T/asm" 2>&1 || fail "dcpilist -asm alpha: $(cat "$T/asm")"
head -1 "$T/asm" | grep -q "^alpha " || fail "dcpilist -asm: $(head -2 "$T/asm")"
listed=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^0x/ {s += $1} END {print s + 0}' "$T/asm")
[ "$listed" = "$a" ] || fail "dcpilist -asm alpha counts $listed, dcpiprof $a"
"$BIN/dcpilist" -db "$T/db" -source alpha "$T/prog" >"$T/src" 2>&1 || fail "dcpilist -source alpha: $(cat "$T/src")"
grep -q 'prog\.c:' "$T/src" && grep -q 's += i % 7' "$T/src" ||
    fail "dcpilist -source alpha has no lines of prog.c: $(head -5 "$T/src")"

# the program rebuilt (other code, another build-id, stripped too): DB/.symcache names the
# profiled build's code only by .eh_frame ranges (prog+0x...), so dcpiprof asks debuginfod for
# the profiled build-id's debug file (a fresh client cache: fetched now) and names alpha and
# beta with the counts above; without DEBUGINFOD_URLS the cache's names stay
sed 's/i % 7/i % 13/' "$T/prog.c" >"$T/prog2.c"
gcc -O1 -fno-inline -fno-ipa-icf -o "$T/prog2" "$T/prog2.c" && strip -s -o "$T/prog" "$T/prog2" ||
    fail "rebuild failed"
id2=$(readelf -n "$T/prog" | sed -n 's/.*Build ID: //p')
[ -n "$id2" ] && [ "$id2" != "$id" ] || fail "the rebuild's build-id: '$id2' (profiled: $id)"
zcat "$T/db/.symcache/syms-$id.gz" | grep -q ' t prog+0x' ||
    fail "syms-$id.gz has no .eh_frame names: $(zcat "$T/db/.symcache/syms-$id.gz" | head -3)"
DEBUGINFOD_CACHE_PATH=$T/cache3 "$BIN/dcpiprof" -db "$T/db" "$T/prog" >"$T/rebuilt" 2>"$T/rebuilt.err" ||
    fail "dcpiprof after the rebuild: $(cat "$T/rebuilt.err")"
[ -s "$T/rebuilt.err" ] && fail "dcpiprof after the rebuild wrote: $(cat "$T/rebuilt.err")"
ab() { rows "$1" | grep -E '^(alpha|beta) ' | sort; }
[ "$(ab "$T/rebuilt")" = "$(ab "$T/named")" ] ||
    fail "after the rebuild: '$(ab "$T/rebuilt")', before: '$(ab "$T/named")'"
[ -s "$T/cache3/$id/debuginfo" ] || fail "the profiled build's debug file was not fetched: $(ls -R "$T/cache3")"
env -u DEBUGINFOD_URLS "$BIN/dcpiprof" -db "$T/db" "$T/prog" >"$T/rebuilt0" 2>&1 ||
    fail "dcpiprof after the rebuild, no debuginfod: $(cat "$T/rebuilt0")"
[ -z "$(ab "$T/rebuilt0")" ] && rows "$T/rebuilt0" | grep -q '^prog+0x' ||
    fail "after the rebuild, no debuginfod: not the cache's names: $(rows "$T/rebuilt0")"

# the server gone, a fresh cache: no names, no error, one line on stderr
kill "$SRV_PID"
wait "$SRV_PID" 2>/dev/null
SRV_PID=
DEBUGINFOD_CACHE_PATH=$T/cache2 "$BIN/dcpiprof" -db "$T/db" "$T/prog" >"$T/down" 2>"$T/down.err" ||
    fail "dcpiprof with the server down failed: $(cat "$T/down.err")"
rows "$T/down" | grep -Eq '^(alpha|beta) ' && fail "named with the server down: $(rows "$T/down")"
[ "$(grep -c "debuginfod: no debug file for $T/prog" "$T/down.err")" = 1 ] &&
    [ "$(wc -l <"$T/down.err")" = 1 ] || fail "stderr with the server down: $(cat "$T/down.err")"
echo "PASS: alpha $a, beta $b samples named through debuginfod (alpha $share% of the two), none without it"

#!/bin/bash
# reliab_procs.sh - dcpid's memory with many short-lived processes and images: a system-wide dcpid
# (-flush 2) while RELIAB_PROCS (default 3000, 1500 in quick mode) short processes run (/bin/true,
# small pipelines, work-demo, 200 programs, each a new image (build-id), and clang -O2, whose code
# is in huge C++ libraries: libLLVM, 110 MB, and libclang-cpp, 59 MB, which dcpid copies and
# symbolises into its caches). dcpid's VmRSS is read from /proc every 100 processes; its peak (VmHWM
# at the end) must stay under RSS_BOUND_KB (docs/reliability.md: the preallocated hash, the
# per-image and per-process tables; 128 MiB), and so must the cache writer's (the child that copies
# and symbolises the images, its peak RSS logged when reaped), also for libLLVM (its cached symbols
# must be there: else clang runs again, up to 4 times); its RSS at the end less that after the first
# 500 processes under GROWTH_KB (forgotten processes must not pile up), status must answer
# throughout, and the processes it still tracks at the end must be far fewer than were started.
# Losses are not silent: status's lost/throttled counts are printed. Needs system-wide perf
# sampling: skips (77) otherwise.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
DEMO=$BIN/samples/work-demo
# (make test's ASan pass, DCPI_TEST_QUICK=1, looks for memory errors on the same paths: half
# as many processes; the first pass bounds the RSS over all 3000)
NPROCS=${RELIAB_PROCS:-$([ "${DCPI_TEST_QUICK:-0}" = 1 ] && echo 1500 || echo 3000)}
RSS_BOUND_KB=$((128 * 1024))
GROWTH_KB=$((32 * 1024))
T=$(mktemp -d /tmp/dcpi-e2e-procs.XXXXXX)
DB=$T/db
cleanup() {
    for l in "$DB"/dcpid-*.lock; do [ -f "$l" ] && kill -9 "$(cat "$l")" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # e2e_le32

for f in dcpid dcpictl samples/work-demo; do
    [ -x "$BIN/$f" ] || fail "$BIN/$f not built"
done
# In a sanitizer build (DCPI_SANITIZE=1 from ctest) ASan keeps up to 256 MB of freed memory in
# quarantine, which is RSS that no leak made: keep its quarantine small so the bounds still mean
# what they say.
[ "${DCPI_SANITIZE:-0}" = 1 ] &&
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:thread_local_quarantine_size_kb=64
out=$(to 30 "$BIN/dcpid" -db "$DB" -event cpu-clock -flush 2 2>&1)
if [ $? -ne 0 ]; then
    case "$out" in
    *perf_event_open*|*not\ supported*|*Permission*)
        echo "SKIP: system-wide perf sampling is not possible here: $out"; exit 77 ;;
    esac
    fail "dcpid did not start: $out"
fi
ST=$(to 70 "$BIN/dcpictl" -db "$DB" status) || fail "status: $ST"
DPID=$(echo "$ST" | awk '$1 == "pid" { print $2 }')
rss() { awk '$1 == "VmRSS:" { print $2 }' /proc/"$DPID"/status; }

# 200 distinct programs (distinct build-ids: distinct images to dcpid, each copied and symbolised
# by its cache writer): one built with gcc, 199 copies with the build-id note's first 4 bytes
# rewritten (200 gcc runs cost ~10 CPU-s, the copies a fraction of a second)
mkdir "$T/img"
printf 'int main(void) { volatile long s = 1; for (long k = 0; k < 200000; k++) s += k; return 0; }\n' >"$T/img/p.c"
gcc -O0 -o "$T/img/p1" "$T/img/p.c" ||
    fail "gcc failed (gcc: build-essential, installed by make test-deps)"
# (the note: 12 bytes of header, "GNU\0", then the id)
off=$(readelf -SW "$T/img/p1" | sed 's/\[ */[/' | awk '$2 == ".note.gnu.build-id" { print $5 }')
[ -n "$off" ] && off=$((0x$off + 16)) || fail "no .note.gnu.build-id in gcc's output: $(readelf -SW "$T/img/p1" | head -20)"
for i in $(seq 2 200); do
    cp "$T/img/p1" "$T/img/p$i"
    e2e_le32 "$i" | dd of="$T/img/p$i" bs=1 seek="$off" conv=notrunc status=none
done
[ "$(for i in 1 2 200; do readelf -n "$T/img/p$i" | awk '/Build ID:/ { print $3 }'; done | sort -u | wc -l)" = 3 ] ||
    fail "the copies' build-ids are not distinct: $(readelf -n "$T/img/p2" "$T/img/p200" | grep 'Build ID')"
NIMG=200
command -v clang >/dev/null || fail "clang not found (an OPT_PKGS package, installed by make test-deps)"
for f in $(seq 150); do
    printf 'double f%d(double *a, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * %d.5 / (a[(i * 7) %% n] + 1); return s; }\n' "$f" "$f"
done >"$T/cxx.c"
cxx() { clang -O2 -c -o "$T/cxx.o" "$T/cxx.c" || fail "clang -O2 -c failed"; }

RSS0=$(rss) peak=$(rss) at500=
for i in $(seq "$NPROCS"); do
    case $((i % 5)) in
    0) /bin/true ;;
    1) echo "$i" | cat >/dev/null ;;
    2) [ $NIMG -gt 0 ] && "$T/img/p$(((i / 5) % NIMG + 1))" || /bin/true ;;
    3) sh -c 'ls / | wc -l' >/dev/null ;;
    4) [ $((i % 50)) = 4 ] && "$DEMO" 20 >/dev/null 2>&1 || /bin/true ;;
    esac
    [ "$i" = $((NPROCS / 2)) ] && cxx
    if [ $((i % 100)) = 0 ]; then
        r=$(rss) || fail "dcpid died after $i processes"
        [ "$r" -gt "$peak" ] && peak=$r
        [ $i = 500 ] && at500=$r
        if [ $((i % 1000)) = 0 ]; then
            to 70 "$BIN/dcpictl" -db "$DB" status >/dev/null || fail "status did not answer after $i processes"
        fi
    fi
done
to 70 "$BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush failed"
# libLLVM sampled and its symbols cached (the flush waits for the cache writer)
llvm_cached() {
    local id
    for d in "$DB"/*/*/libLLVM*_*; do
        id=${d##*_}
        [ -d "$d" ] && [ -f "$DB/.symcache/syms-$id.gz" ] && return 0
    done
    return 1
}
tries=1
until llvm_cached; do
    [ $tries -lt 4 ] || fail "no samples in libLLVM cached after $tries clang -O2 -c runs"
    cxx
    tries=$((tries + 1))
    to 70 "$BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush failed"
done
ST=$(to 70 "$BIN/dcpictl" -db "$DB" status) || fail "status at the end: $ST"
r=$(rss)
[ "$r" -gt "$peak" ] && peak=$r
hwm=$(awk '$1 == "VmHWM:" { print $2 }' /proc/"$DPID"/status)
[ "$hwm" -gt "$peak" ] && peak=$hwm
wpeak=$(grep -oE 'writer pid [0-9]+ peak RSS [0-9]+ kB' "$DB"/dcpid-*.log | awk '$6 > m { m = $6 } END { print m + 0 }')
nwriters=$(grep -cE 'writer pid [0-9]+ peak RSS' "$DB"/dcpid-*.log)
procs=$(echo "$ST" | awk '$1 == "processes" { print $2 }')
images=$(echo "$ST" | awk '$1 == "images" { print $2 }')
ev=$(echo "$ST" | grep '^event ')
echo "dcpid VmRSS: ${RSS0} kB at start, ${at500:-?} kB after 500 processes, peak ${peak} kB (VmHWM), ${r} kB at the end"
echo "cache writers: $nwriters, largest peak RSS ${wpeak} kB (libLLVM cached after $tries clang run(s))"
echo "status: images $images processes $procs; $ev"
[ "$peak" -lt "$RSS_BOUND_KB" ] || fail "peak RSS ${peak} kB >= bound ${RSS_BOUND_KB} kB"
[ "$nwriters" -gt 0 ] || fail "no cache writer's peak RSS in the log"
[ "$wpeak" -lt "$RSS_BOUND_KB" ] || fail "cache writer's peak RSS ${wpeak} kB >= bound ${RSS_BOUND_KB} kB"
[ -z "$at500" ] || [ $((r - at500)) -lt "$GROWTH_KB" ] ||
    fail "RSS grew by $((r - at500)) kB after the first 500 processes (bound $GROWTH_KB kB)"
[ -n "$procs" ] && [ "$procs" -lt $((NPROCS / 2)) ] ||
    fail "dcpid still tracks $procs processes after $NPROCS short-lived ones exited"
echo "$ev" | grep -Eq ' lost [0-9]+ throttled [0-9]+' || fail "status shows no lost/throttled counts: $ev"
echo "ok $NPROCS processes ($NIMG fresh images, clang in libLLVM): peak RSS ${peak} kB, cache writer ${wpeak} kB < ${RSS_BOUND_KB} kB, status answered"
to 70 "$BIN/dcpictl" -db "$DB" quit >/dev/null
exit 0

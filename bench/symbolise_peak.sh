#!/bin/bash
# bench/symbolise_peak.sh - dcpid's memory peak while a system-wide dcpid profiles programs in
# huge C++ libraries and writes their code and symbol caches: clang -O2 -c (libLLVM, 110 MB, and
# libclang-cpp, 59 MB) ROUNDS times, then a flush. Prints dcpid's VmHWM, the largest peak RSS of
# its cache writer (the child that copies and symbolises the images: "writer pid N peak RSS M kB"
# in the log; an older dcpid without one symbolises in its own memory, counted in its VmHWM),
# and as the peer, the peak RSS of `nm -D --demangle` (binutils) listing the symbols of the same
# libLLVM, with the ratio. Root (system-wide perf sampling). For an ASan build set
# ASAN_OPTIONS=quarantine_size_mb=1 as reliab_procs.sh does (its 256 MB quarantine is RSS too).
# Usage: bench/symbolise_peak.sh [BUILD_DIR] [ROUNDS]
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-3}
T=$(mktemp -d /tmp/dcpi-bench-sympeak.XXXXXX)
trap '"$B/dcpictl" -db "$T/db" quit >/dev/null 2>&1; rm -rf "$T"' EXIT
for f in $(seq 150); do
    printf 'double f%d(double *a, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * %d.5 / (a[(i * 7) %% n] + 1); return s; }\n' "$f" "$f"
done >"$T/cxx.c"
"$B/dcpid" -db "$T/db" -event cpu-clock -flush 600 >/dev/null
P=$("$B/dcpictl" -db "$T/db" status | awk '$1 == "pid" { print $2 }')
for _ in $(seq "$ROUNDS"); do clang -O2 -c -o "$T/cxx.o" "$T/cxx.c"; done
"$B/dcpictl" -db "$T/db" flush >/dev/null
hwm=$(awk '$1 == "VmHWM:" { print $2 }' /proc/"$P"/status)
w=$(grep -ohE 'writer pid [0-9]+ peak RSS [0-9]+ kB' "$T"/db/dcpid-*.log | awk '$6 > m { m = $6 } END { print m + 0 }')
lib=$(ls -d "$T"/db/*/*/libLLVM*_* 2>/dev/null | head -1)
[ -n "$lib" ] || { echo "no samples in libLLVM: raise ROUNDS"; exit 1; }
id=${lib##*_}
libpath=$(ldd "$(command -v clang)" | awk '/libLLVM/ { print $3 }')
nmk=$( { /usr/bin/time -f '%M' nm -D --demangle "$libpath" >/dev/null; } 2>&1 | tail -1)
top=$((hwm > w ? hwm : w))
echo "libLLVM ($id) cached: $( [ -f "$T/db/.symcache/syms-$id.gz" ] && echo yes || echo no)"
printf 'dcpid VmHWM %d kB, cache writer peak %d kB; nm -D --demangle %s: %d kB; ratio %.2fx\n' \
    "$hwm" "$w" "$(basename "$libpath")" "$nmk" "$(echo "$top $nmk" | awk '{ print $1 / $2 }')"

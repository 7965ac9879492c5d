#!/bin/bash
# bench/formats_speed.sh - export and import speed of dcpi's format converters against the peer
# tools reading the same data: a generated program with NFUNCS functions (bench/gen_bigprof
# src, compiled with gcc -g) and a dcpi epoch of NSAMPLES samples spread over them (gen_bigprof
# db). Timed (median wall time of REPS runs each):
#   dcpiexport -format gperftools      vs  google-pprof --text PROG FILE (reading that file)
#   dcpiimport -format gperftools FILE vs  the same google-pprof read
#   dcpiexport -format gmon            vs  gprof -b -p PROG gmon.out
#   dcpiimport -format gmon gmon.out   vs  the same gprof read
#   dcpiexport -format pprof           (no peer reader installed; informative)
# and prints each ratio peer / dcpi (> 1: dcpi is faster).
# Usage: bench/formats_speed.sh [BUILD_DIR] [NFUNCS] [NSAMPLES] [REPS]
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
NF=${2:-10000}
NS=${3:-1000000}
REPS=${4:-3}
T=$(mktemp -d /tmp/dcpi-bench-fmt.XXXXXX)
trap 'rm -rf "$T"' EXIT
for c in gcc google-pprof gprof; do
    command -v $c >/dev/null || { echo "bench: $c is not installed" >&2; exit 77; }
done
G="$B/bench/gen_bigprof"
[ -x "$G" ] || { echo "bench: $G not built" >&2; exit 1; }

"$G" src "$NF" >"$T/big.c"
gcc -O0 -g -o "$T/big" "$T/big.c"
"$G" db "$T/db" "$T/big" "$NS" >/dev/null
"$B/dcpiexport" -db "$T/db" -format gperftools -o "$T/big.prof"
"$B/dcpiexport" -db "$T/db" -format gmon -o "$T/gmon.out"

# secs CMD...: median wall seconds of REPS runs (output discarded)
secs() {
    local i
    for ((i = 0; i < REPS; i++)); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
    done | sort -g | awk '{a[NR]=$1} END {printf "%.3f\n", a[int((NR+1)/2)]}'
}

imp() { rm -rf "$T/imp"; "$B/dcpiimport" -db "$T/imp" "$@"; }

echo "data: $NF functions, $NS samples, $(stat -c %s "$T/big.prof") byte CPU profile," \
    "$(stat -c %s "$T/gmon.out") byte gmon.out; median of $REPS runs"
pprof_read=$(secs google-pprof --text "$T/big" "$T/big.prof")
gprof_read=$(secs gprof -b -p "$T/big" "$T/gmon.out")
exp_g=$(secs "$B/dcpiexport" -db "$T/db" -format gperftools -o "$T/x.prof")
imp_g=$(secs imp -format gperftools -image "$T/big" "$T/big.prof")
exp_m=$(secs "$B/dcpiexport" -db "$T/db" -format gmon -o "$T/x.gmon")
imp_m=$(secs imp -format gmon -image "$T/big" "$T/gmon.out")
exp_p=$(secs "$B/dcpiexport" -db "$T/db" -format pprof -o "$T/x.pb.gz")

row() { printf "%-34s %8ss   %-28s %8ss   ratio %6.1fx\n" "$1" "$2" "$3" "$4" \
    "$(echo "$4 / ($2 + 0.0005)" | bc -l)"; }
row "dcpiexport -format gperftools" "$exp_g" "google-pprof --text (read)" "$pprof_read"
row "dcpiimport -format gperftools" "$imp_g" "google-pprof --text (read)" "$pprof_read"
row "dcpiexport -format gmon" "$exp_m" "gprof -b -p (read)" "$gprof_read"
row "dcpiimport -format gmon" "$imp_m" "gprof -b -p (read)" "$gprof_read"
printf "%-34s %8ss   (no peer reader installed)\n" "dcpiexport -format pprof" "$exp_p"

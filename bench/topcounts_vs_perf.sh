#!/bin/bash
# bench/topcounts_vs_perf.sh - dcpitopcounts against perf report --sort sym,srcline on the same
# run: dcpid runs `perf record -- xz -9 -T2` (a Debian program, liblzma and libc), both sampling
# cpu-clock at FREQ Hz, on an input sized for about NSAMPLES samples each. Then, median wall time
# and peak memory (RSS, /usr/bin/time) of REPS runs each of:
#   dcpitopcounts -n 100                                  (the top 100 instructions, with text
#                                                          and source line)
#   dcpitopcounts -n 0                                    (every sampled instruction)
#   perf report --stdio --sort sym,srcline                 (every (symbol, source line) row)
#   perf report --stdio --sort sym                         (informative: without srcline)
# and, when BIG is given (e.g. 10000000), dcpitopcounts alone on a generated epoch of BIG
# samples (bench/gen_bigprof over a 10,000-function program compiled with -g: every sampled
# PC has a source line); perf has no such recording to read.
# Usage: bench/topcounts_vs_perf.sh [BUILD_DIR] [NSAMPLES] [FREQ] [REPS] [BIG]
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
NS=${2:-1000000}
FREQ=${3:-20000}
REPS=${4:-3}
BIG=${5:-}
T=$(mktemp -d /tmp/dcpi-bench-top.XXXXXX)
trap 'rm -rf "$T"' EXIT
for c in perf xz gcc /usr/bin/time; do
    command -v $c >/dev/null || { echo "bench: $c is not installed" >&2; exit 77; }
done

# about 1.8 MB of this text per CPU-second of xz -9; NS / FREQ CPU-seconds
mb=$(awk -v n="$NS" -v f="$FREQ" 'BEGIN { printf "%d", 1.8 * n / f + 1 }')
seq 1 $((mb * 75000)) | awk '{ print $1 * 7919 % 1000003, $1 }' >"$T/in.txt"
"$B/dcpid" -db "$T/db" -freq "$FREQ" -quiet -- perf record -q -F "$FREQ" -e cpu-clock \
    -o "$T/perf.data" -- xz -9 -T2 --block-size=4MiB -c "$T/in.txt" >/dev/null 2>"$T/rec.err" ||
    { echo "bench: recording failed: $(tail -3 "$T/rec.err")" >&2; exit 1; }
nd=$("$B/dcpiprof" -db "$T/db" -i -csl | awk -F, 'NR > 1 { n += $1 } END { print n + 0 }')
np=$(perf report -i "$T/perf.data" --stdio -q -n --sort dso 2>/dev/null |
    awk '$2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }')

# run NAME CMD...: median wall seconds and the largest peak RSS (MiB) of REPS runs
run() {
    local name=$1 i
    shift
    for ((i = 0; i < REPS; i++)); do
        /usr/bin/time -f "%e %M" -o "$T/time" "$@" >"$T/out.$name" 2>/dev/null ||
            { echo "bench: failed: $*" >&2; exit 1; }
        cat "$T/time"
    done | sort -n >"$T/times"
    awk -v r="$REPS" -v name="$name" -v rows="$(wc -l <"$T/out.$name")" '
        { t[NR] = $1; if ($2 > m) m = $2 }
        END { printf "%s %.3f %.1f %d\n", name, t[int((r + 1) / 2)], m / 1024, rows }' "$T/times"
}
{
    run dcpitopcounts "$B/dcpitopcounts" -db "$T/db" -n 100
    run dcpitopcounts_all "$B/dcpitopcounts" -db "$T/db" -n 0
    run perf_srcline perf report -i "$T/perf.data" --stdio --no-children -n --sort sym,srcline
    run perf_sym perf report -i "$T/perf.data" --stdio --no-children -n --sort sym
} >"$T/res"
if [ -n "$BIG" ]; then
    "$B/bench/gen_bigprof" src 10000 >"$T/big.c"
    gcc -O0 -g -o "$T/big" "$T/big.c"
    "$B/bench/gen_bigprof" db "$T/dbbig" "$T/big" "$BIG" >/dev/null
    run dcpitopcounts_big "$B/dcpitopcounts" -db "$T/dbbig" -n 100 >>"$T/res"
    run dcpiprof_big "$B/dcpiprof" -db "$T/dbbig" >>"$T/res"
fi

echo "samples: dcpi $nd, perf $np (xz -9 -T2 on $mb MB, cpu-clock at $FREQ Hz, same run)"
echo
echo "| command | wall (s) | peak RSS (MiB) | output lines |"
echo "| --- | --- | --- | --- |"
awk '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$T/res"
awk '$1 == "dcpitopcounts" { d = $2; dm = $3 } $1 == "perf_srcline" { p = $2; pm = $3 }
     END { if (d > 0) printf "\nperf srcline / dcpitopcounts: time %.1fx, memory %.1fx\n", p / d, pm / dm }' "$T/res"

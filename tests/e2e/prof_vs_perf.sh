#!/bin/bash
# e2e: dcpid + dcpiprof against perf record + perf report on the SAME run of the same binary.
# dcpid runs `perf record ... -- work-demo`: both tools sample work-demo at 1 kHz at once
# (DCPI_TEST_FREQ sets another rate; the run is 2 s of CPU at 1 kHz, scaled to the rate, redone
# twice and four times as long until both tools have 1000 samples).
# The truth is per unit of CPU time and machine-dependent (hot_mul's multiply costs differ
# between CPUs), so dcpi is compared with perf, not with fixed figures: dcpiprof must name
# hot_mul, the procedure with 6 of the 10 calls per round, first, as perf does; both tools need
# at least 1000 samples in the work-demo image, and each top procedure's two shares must agree
# within the binomial tolerance of their sample counts (lib/stats.sh stat_same).
set -eu
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
FREQ=${DCPI_TEST_FREQ:-1000}
T=$(mktemp -d /tmp/dcpi-e2e-perf.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_require perf linux-perf
if ! perf record -q -e cpu-clock -o "$T/probe.data" -- true >"$T/probe.err" 2>&1; then
    echo "SKIP: perf record cannot open cpu-clock here (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)): $(head -c 300 "$T/probe.err")"
    exit 77
fi

# run SCALE: dcpid profiling perf record profiling work-demo, 2 s (x SCALE) of samples at FREQ;
# redone twice and four times as long until both have 1000 work-demo samples (stat_until)
run() {
    rm -rf "$T/db" "$T/perf.data"
    "$B/dcpid" -db "$T/db" -freq "$FREQ" -quiet -- \
        perf record -q -F "$FREQ" -e cpu-clock -o "$T/perf.data" -- "$B/samples/work-demo" \
        "$(awk -v f="$FREQ" -v k="$1" 'BEGIN { printf "%d", k * 2000 * 1000 / f }')" >/dev/null
    # perf's reading: share and samples of each symbol among work-demo's own samples.
    perf report -i "$T/perf.data" --stdio -q -n --dsos work-demo --sort sym --percentage relative \
        2>/dev/null | awk '$3 == "[.]" {gsub("%", "", $1); print $4, $1, $2}' >"$T/perf.txt"
    # dcpi's reading, restricted to the work-demo image.
    "$B/dcpiprof" -db "$T/db" -csl work-demo >"$T/dcpi.csv"
    awk -F, 'NR > 1 {gsub("%", "", $2); print $4, $2, $1}' "$T/dcpi.csv" >"$T/dcpi.txt"
    np=$(awk '{ n += $3 } END { print n + 0 }' "$T/perf.txt")
    nd=$(awk '{ n += $3 } END { print n + 0 }' "$T/dcpi.txt")
}
count() { echo $((np < nd ? np : nd)); }
stat_until 1000 4 run count

echo "perf report:"; cat "$T/perf.txt"
echo "dcpiprof:"; cat "$T/dcpi.txt"

top_dcpi=$(head -1 "$T/dcpi.txt" | awk '{print $1}')
top_perf=$(sort -k2 -g -r "$T/perf.txt" | head -1 | awk '{print $1}')
[ "$top_dcpi" = "hot_mul" ] || { echo "FAIL: dcpiprof's first procedure is '$top_dcpi', expected hot_mul"; exit 1; }
[ "$top_perf" = "$top_dcpi" ] || { echo "FAIL: perf's hottest is $top_perf, dcpi's $top_dcpi"; exit 1; }
fail=0
stat_min "perf's work-demo samples" "$np" 1000 || exit 1
stat_min "dcpi's work-demo samples" "$nd" 1000 || exit 1
for f in hot_mul hot_add hot_xor; do
    p=$(awk -v f="$f" '$1 == f {print $2}' "$T/perf.txt")
    d=$(awk -v f="$f" '$1 == f {print $2}' "$T/dcpi.txt")
    [ -n "$p" ] && [ -n "$d" ] || { echo "FAIL: $f missing (perf '$p', dcpi '$d')"; fail=1; continue; }
    stat_same "$f (perf vs dcpi)" "$p" "$np" "$d" "$nd" || { echo "FAIL: $f"; fail=1; }
done
exit $fail

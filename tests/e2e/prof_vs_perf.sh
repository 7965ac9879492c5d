#!/bin/bash
# e2e: dcpid + dcpiprof against perf record + perf report on the SAME run of the same binary.
# dcpid runs `perf record ... -- work-demo`: both tools sample work-demo at 1 kHz at once.
# dcpiprof must name the hottest procedure of work-demo first, and the shares of its top
# procedures must be within 5 points of perf report's (restricted to the work-demo image).
set -eu
B=${DCPI_BIN:?}
T=$(mktemp -d /tmp/dcpi-e2e-perf.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_require perf linux-perf
if ! perf record -q -e cpu-clock -o "$T/probe.data" -- true >"$T/probe.err" 2>&1; then
    echo "SKIP: perf record cannot open cpu-clock here (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)): $(head -c 300 "$T/probe.err")"
    exit 77
fi

"$B/dcpid" -db "$T/db" -freq 1000 -quiet -- \
    perf record -q -F 1000 -e cpu-clock -o "$T/perf.data" -- "$B/samples/work-demo" 3000 >/dev/null

# perf's reading: share of each symbol among work-demo's own samples.
perf report -i "$T/perf.data" --stdio -q --dsos work-demo --sort sym --percentage relative 2>/dev/null |
    awk '$2 == "[.]" {gsub("%", "", $1); print $3, $1}' >"$T/perf.txt"
# dcpi's reading, restricted to the work-demo image.
"$B/dcpiprof" -db "$T/db" -csl work-demo >"$T/dcpi.csv"
awk -F, 'NR > 1 {gsub("%", "", $2); print $4, $2}' "$T/dcpi.csv" >"$T/dcpi.txt"

echo "perf report:"; cat "$T/perf.txt"
echo "dcpiprof:"; cat "$T/dcpi.txt"

top_dcpi=$(head -1 "$T/dcpi.txt" | awk '{print $1}')
top_perf=$(sort -k2 -g -r "$T/perf.txt" | head -1 | awk '{print $1}')
[ "$top_dcpi" = "hot_mul" ] || { echo "FAIL: dcpiprof's first procedure is '$top_dcpi', expected hot_mul"; exit 1; }
[ "$top_perf" = "$top_dcpi" ] || { echo "FAIL: perf's hottest is $top_perf, dcpi's $top_dcpi"; exit 1; }
fail=0
for f in hot_mul hot_add hot_xor; do
    p=$(awk -v f="$f" '$1 == f {print $2}' "$T/perf.txt")
    d=$(awk -v f="$f" '$1 == f {print $2}' "$T/dcpi.txt")
    [ -n "$p" ] && [ -n "$d" ] || { echo "FAIL: $f missing (perf '$p', dcpi '$d')"; fail=1; continue; }
    if awk -v p="$p" -v d="$d" 'BEGIN {x = p - d; if (x < 0) x = -x; exit !(x <= 5)}'; then
        echo "ok: $f perf $p% dcpi $d%"
    else
        echo "FAIL: $f perf $p% dcpi $d% differ by more than 5 points"; fail=1
    fi
done
exit $fail

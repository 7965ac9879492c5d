#!/bin/bash
# soak.sh - dcpid left running beside fork churn: resident memory over time, CPU and disk cost.
#   bench/soak.sh BUILD [SECONDS] [STEP]     (default 1800 s, a sample every 60 s)
# A system-wide dcpid (default flags: cpu-clock, flush every 60 s) and, as the peer in the same
# run, `perf record -a -e cpu-clock -F 1000` run beside a shell loop that starts /bin/true over
# and over (nice 10) for SECONDS. Every STEP seconds: each profiler's RSS (VmRSS) and CPU time
# (utime+stime), dcpid's database size and perf.data's size, dcpid's status (samples, lost,
# processes, images, memory, flush cost). At the end: the RSS after the first minute against
# the largest RSS later (flat = the bound holds), CPU seconds and bytes on disk of each, and
# the ratios dcpid/perf. Needs root (system-wide sampling) and perf.
set -u
BUILD=${1:?usage: soak.sh BUILD [SECONDS] [STEP]}
SECS=${2:-1800}
STEP=${3:-60}
BIN=$(cd "$BUILD" && pwd)
command -v perf >/dev/null || { echo "soak: perf not installed (linux-perf)"; exit 1; }
T=$(mktemp -d /tmp/dcpi-soak.XXXXXX)
DB=$T/db
CHURN= PERFPID= DPID=
cleanup() {
    [ -n "$CHURN" ] && kill "$CHURN" 2>/dev/null
    [ -n "$PERFPID" ] && kill -INT "$PERFPID" 2>/dev/null && wait "$PERFPID" 2>/dev/null
    [ -n "$DPID" ] && "$BIN/dcpictl" -db "$DB" quit >/dev/null 2>&1
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
rss() { awk '/^VmRSS/ { print $2 }' /proc/"$1"/status 2>/dev/null || echo 0; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' /proc/"$1"/stat 2>/dev/null || echo 0; }
du_b() { du -sb "$1" 2>/dev/null | awk '{ print $1 }'; }

"$BIN/dcpid" -db "$DB" -quiet || { echo "soak: dcpid did not start"; exit 1; }
DPID=$("$BIN/dcpictl" -db "$DB" status | awk '$1 == "pid" { print $2 }')
perf record -a -e cpu-clock -F 1000 -q -o "$T/perf.data" >/dev/null 2>"$T/perf.err" &
PERFPID=$!
sleep 1
nice -n 10 bash -c 'while :; do /bin/true; done' &
CHURN=$!
t0=$(date +%s)
printf "%6s %10s %10s %8s %8s %12s %12s %10s %9s %7s\n" t_s dcpid_kB perf_kB dcpid_s perf_s db_bytes perfdata_b samples lost procs
rows=$T/rows
while :; do
    t=$(($(date +%s) - t0))
    st=$("$BIN/dcpictl" -db "$DB" status 2>/dev/null)
    smp=$(echo "$st" | awk '$1 == "event" { s += $6 } END { print s + 0 }')
    lost=$(echo "$st" | awk '$1 == "event" { s += $8 } END { print s + 0 }')
    procs=$(echo "$st" | awk '$1 == "processes" { print $2 }')
    printf "%6d %10d %10d %8s %8s %12d %12d %10d %9d %7s\n" "$t" "$(rss "$DPID")" "$(rss "$PERFPID")" \
        "$(cpu "$DPID")" "$(cpu "$PERFPID")" "$(du_b "$DB")" "$(du_b "$T/perf.data")" "$smp" "$lost" "$procs" | tee -a "$rows"
    [ "$t" -ge "$SECS" ] && break
    sleep "$STEP"
done
echo "$st" | grep -E '^(images|processes|memory|flushes|hash)'
# the first row at or after 60 s, and the largest RSS from then on
awk 'NR > 0 && $1 >= 60 && !base { base = $2; pbase = $3 } base && $2 > max { max = $2 } base && $3 > pmax { pmax = $3 }
     END { printf "dcpid RSS after the first minute %d kB, largest later %d kB (+%.1f%%); perf record %d kB -> %d kB\n",
           base, max, 100 * (max - base) / base, pbase, pmax }' "$rows"
tail -1 "$rows" | awk '{ printf "over %d s: dcpid %s s CPU, %d bytes on disk; perf record %s s CPU, %d bytes; dcpid/perf CPU %.2fx, disk %.3fx\n",
    $1, $4, $6, $5, $7, ($5 > 0 ? $4 / $5 : 0), ($7 > 0 ? $6 / $7 : 0) }'

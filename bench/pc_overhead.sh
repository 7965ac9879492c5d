#!/bin/bash
# bench/pc_overhead.sh - PC-sampling overhead of dcpid vs perf record, side by side, same work.
#
# For each run it measures, for the fixed workload `work-demo -n ROUNDS`:
#   target CPU   the workload's own CPU time (it reports getrusage(RUSAGE_SELF) on stderr)
#   tool CPU     the profiler's own CPU time = CPU of the whole command tree - target CPU
# unprofiled, under `dcpid -freq HZ -- ...` and under `perf record -F HZ -e cpu-clock -- ...`,
# interleaved, REPS times, and prints medians and ratios. Then the start-up time of each tool
# (`-- true`). Usage: bench/pc_overhead.sh [BUILD_DIR] [ROUNDS] [REPS] [HZ]
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-2000}
REPS=${3:-7}
HZ=${4:-1000}
W="$B/samples/work-demo"
T=$(mktemp -d /tmp/dcpi-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
TIMEFORMAT='%3U %3S %3R'

# run LABEL CMD... : prints "target_cpu total_cpu wall"
run() {
    local out
    out=$( { time "$@" >/dev/null 2>"$T/err"; } 2>&1 )
    local target
    target=$(awk '/^work-demo: cpu/ {print $3}' "$T/err")
    [ -n "$target" ] || { echo "bench: no cpu line from: $*" >&2; cat "$T/err" >&2; exit 1; }
    echo "$target $(echo "$out" | awk '{print $1+$2, $3}')"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for i in $(seq "$REPS"); do
    run "$W" -n "$ROUNDS" >>"$T/base"
    rm -rf "$T/db"
    run "$B/dcpid" -db "$T/db" -freq "$HZ" -quiet -- "$W" -n "$ROUNDS" >>"$T/dcpi"
    run perf record -q -F "$HZ" -e cpu-clock -o "$T/perf.data" -- "$W" -n "$ROUNDS" >>"$T/perf"
done

base=$(awk '{print $1}' "$T/base" | median)
d_t=$(awk '{print $1}' "$T/dcpi" | median)
p_t=$(awk '{print $1}' "$T/perf" | median)
d_own=$(awk '{print $2-$1}' "$T/dcpi" | median)
p_own=$(awk '{print $2-$1}' "$T/perf" | median)
d_wall=$(awk '{print $3}' "$T/dcpi" | median)
p_wall=$(awk '{print $3}' "$T/perf" | median)
b_wall=$(awk '{print $3}' "$T/base" | median)

for i in $(seq "$REPS"); do
    rm -rf "$T/db2"
    { time "$B/dcpid" -db "$T/db2" -quiet -- true; } 2>&1 | awk '{print $3}' >>"$T/su_d"
    { time perf record -q -F "$HZ" -e cpu-clock -o "$T/p2.data" -- true >/dev/null 2>&1; } 2>&1 |
        awk '{print $3}' >>"$T/su_p"
done
su_d=$(median <"$T/su_d")
su_p=$(median <"$T/su_p")

printf 'workload: work-demo -n %s, %s Hz cpu-clock, median of %s interleaved runs, %s CPUs\n' \
    "$ROUNDS" "$HZ" "$REPS" "$(nproc)"
printf '%-22s %10s %10s %10s\n' "" unprofiled dcpid "perf record"
printf '%-22s %10.3f %10.3f %10.3f\n' "target CPU (s)" "$base" "$d_t" "$p_t"
awk -v b="$base" -v d="$d_t" -v p="$p_t" 'BEGIN {printf "%-22s %10s %9.4fx %9.4fx\n", "target CPU ratio", "1", d/b, p/b}'
printf '%-22s %10s %10.3f %10.3f\n' "profiler own CPU (s)" "-" "$d_own" "$p_own"
awk -v d="$d_own" -v p="$p_own" 'BEGIN {printf "%-22s %10s %10s %9.3fx\n", "dcpid/perf own CPU", "", "", (p>0? d/p : 0)}'
printf '%-22s %10.3f %10.3f %10.3f\n' "wall (s)" "$b_wall" "$d_wall" "$p_wall"
printf '%-22s %10s %10.3f %10.3f\n' "start-up, -- true (s)" "-" "$su_d" "$su_p"

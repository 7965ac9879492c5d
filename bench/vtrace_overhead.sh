#!/bin/bash
# bench/vtrace_overhead.sh - cost of value profiling: the same fixed work `work-demo -n ROUNDS`
# unprofiled, under `dcpid -freq HZ -- ...` (PC sampling) and under
# `dcpid -freq HZ -vtrace vp-classic -vtrace vp-addr [-vrate N] -- ...` with the default backend
# (bp where execute breakpoints work) and with -vregs, interleaved, REPS times; prints the medians of the target's own CPU time (work-demo reports getrusage on
# stderr), their ratios to the unprofiled run, dcpid's own CPU (CPU of the command tree minus
# the target's). Same approach as pc_overhead.sh.
# Usage: bench/vtrace_overhead.sh [BUILD_DIR] [ROUNDS] [REPS] [HZ] [VRATE]  (VBUDGET=PCT: -vbudget)
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-2000}
REPS=${3:-7}
HZ=${4:-1000}
VRATE=${5:-}
W="$B/samples/work-demo"
T=$(mktemp -d /tmp/dcpi-vbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
TIMEFORMAT='%3U %3S %3R'
vr=()
[ -n "$VRATE" ] && vr=(-vrate "$VRATE")
[ -n "${VBUDGET:-}" ] && vr+=(-vbudget "$VBUDGET") # bp's -vbudget (VBUDGET=5 bench/...)

# run CMD... : prints "target_cpu total_cpu wall"
run() {
    local out target
    out=$( { time "$@" >/dev/null 2>"$T/err"; } 2>&1 )
    target=$(awk '/^work-demo: cpu/ {print $3}' "$T/err")
    [ -n "$target" ] || { echo "bench: no cpu line from: $*" >&2; cat "$T/err" >&2; exit 1; }
    echo "$target $(echo "$out" | awk '{print $1+$2, $3}')"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPS"); do
    run "$W" -n "$ROUNDS" >>"$T/base"
    rm -rf "$T/db"
    run "$B/dcpid" -db "$T/db" -freq "$HZ" -quiet -- "$W" -n "$ROUNDS" >>"$T/pc"
    rm -rf "$T/vdb"
    run "$B/dcpid" -db "$T/vdb" -freq "$HZ" -vtrace vp-classic -vtrace vp-addr "${vr[@]}" \
        -- "$W" -n "$ROUNDS" >>"$T/val"
    rm -rf "$T/vdb"
    run "$B/dcpid" -db "$T/vdb" -freq "$HZ" -vtrace vp-classic -vtrace vp-addr -vregs "${vr[@]}" \
        -- "$W" -n "$ROUNDS" >>"$T/regs"
done
col() { awk -v c="$1" '{print $c}' "$2" | median; }
own() { awk '{print $2-$1}' "$1" | median; }
base=$(col 1 "$T/base")
pc=$(col 1 "$T/pc")
val=$(col 1 "$T/val")
regs=$(col 1 "$T/regs")
printf 'workload: work-demo -n %s, %s Hz cpu-clock, vrate %s, median of %s interleaved runs, %s CPUs\n' \
    "$ROUNDS" "$HZ" "${VRATE:-default}" "$REPS" "$(nproc)"
printf '%-22s %10s %10s %14s %14s\n' "" unprofiled "dcpid (PC)" "-vtrace (bp)" "-vtrace -vregs"
printf '%-22s %10.3f %10.3f %14.3f %14.3f\n' "target CPU (s)" "$base" "$pc" "$val" "$regs"
awk -v b="$base" -v p="$pc" -v v="$val" -v r="$regs" \
    'BEGIN {printf "%-22s %10s %9.4fx %13.4fx %13.4fx\n", "target CPU ratio", "1", p/b, v/b, r/b}'
printf '%-22s %10s %10.3f %14.3f %14.3f\n' "dcpid own CPU (s)" "-" "$(own "$T/pc")" "$(own "$T/val")" \
    "$(own "$T/regs")"
printf '%-22s %10.3f %10.3f %14.3f %14.3f\n' "wall (s)" "$(col 3 "$T/base")" "$(col 3 "$T/pc")" \
    "$(col 3 "$T/val")" "$(col 3 "$T/regs")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

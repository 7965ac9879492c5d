#!/bin/bash
# bench/vpworker_cost.sh - cost of plugin isolation (docs/vprofiler.md, ISOLATION IN DCPID): the
# same fixed work `work-demo -n ROUNDS` under `dcpid -freq HZ -vtrace vp-classic -vtrace vp-addr
# -vrate 1000000` (every user sample becomes a trace entry: the most hand-overs) with the
# plugins in worker processes (default) and in dcpid (-vinproc), interleaved, REPS times, at
# -freq 1000 and 10000. Prints medians of the target's CPU (work-demo's getrusage line), dcpid's
# CPU with its workers (CPU of the command tree minus the target's).
# Usage: bench/vpworker_cost.sh [BUILD_DIR] [ROUNDS] [REPS]
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-1000}
REPS=${3:-5}
W="$B/samples/work-demo"
T=$(mktemp -d /tmp/dcpi-vpwbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
TIMEFORMAT='%3U %3S %3R'

# run MODE HZ: prints "target_cpu dcpid_cpu"
run() {
    local mode=$1 hz=$2 out target flags=()
    [ "$mode" = inproc ] && flags=(-vinproc)
    rm -rf "$T/db"
    out=$( { time "$B/dcpid" -db "$T/db" -log "$T/log" -event cpu-clock -freq "$hz" \
        -vtrace vp-classic -vtrace vp-addr -vrate 1000000 "${flags[@]}" -- "$W" -n "$ROUNDS" \
        >/dev/null 2>"$T/err"; } 2>&1)
    target=$(awk '/^work-demo: cpu/ {print $3}' "$T/err")
    [ -n "$target" ] || { echo "bench: no cpu line:" >&2; cat "$T/err" >&2; exit 1; }
    echo "$target $(echo "$out" | awk -v t="$target" '{printf "%.3f", $1 + $2 - t}')"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-6s %-7s %12s %12s\n" freq mode target_cpu_s dcpid_cpu_s
for hz in 1000 10000; do
    for mode in worker inproc; do : >"$T/$hz.$mode"; done
    for _ in $(seq 1 "$REPS"); do
        for mode in worker inproc; do run "$mode" "$hz" >>"$T/$hz.$mode"; done
    done
    for mode in worker inproc; do
        printf "%-6s %-7s %12s %12s\n" "$hz" "$mode" \
            "$(cut -d' ' -f1 "$T/$hz.$mode" | median)" "$(cut -d' ' -f2 "$T/$hz.$mode" | median)"
    done
done

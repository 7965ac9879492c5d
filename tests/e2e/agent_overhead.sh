#!/bin/bash
# agent_overhead.sh - libdcpi-agent.so end to end: work-step's output is byte-identical with and
# without the agent (plain, fork+threads+exec, own SIGTRAP/SIGPROF handlers, blocked signals),
# ring files appear per process image, and the agent's CPU cost at 16-instruction bursts and
# 100 bursts/s stays within 1.10x of the unprofiled run (best of 3 runs each).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
AGENT=$BIN/libdcpi-agent.so
WORK=$BIN/samples/work-step
T=$(mktemp -d /tmp/dcpi-e2e-agent.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for f in "$AGENT" "$WORK"; do [ -e "$f" ] || fail "$f not built"; done

# run a command with the agent (only the command: timeout itself is not preloaded)
agent() {
    timeout 60 bash -c 'LD_PRELOAD=$1 DCPI_AGENT_RING=$2 exec "${@:3}"' _ "$AGENT" "$T/ring" "$@"
}

for args in "-n 20" "-f -t 2 -x -n 10" "-s -n 5" "-b -n 10"; do
    plain=$(timeout 60 "$WORK" $args) || fail "work-step $args failed"
    with=$(agent "$WORK" $args) || fail "work-step $args under the agent failed"
    [ "$plain" = "$with" ] || fail "output differs for '$args': '$plain' vs '$with'"
done
n=$(ls "$T" | wc -l)
[ "$n" -eq 6 ] || fail "expected 6 ring files (4 runs, a fork, an exec), found $n"
rm -f "$T"/ring.*

# CPU seconds (user + sys) of one run
cpu() {
    local TIMEFORMAT='%U %S'
    { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ print $1 + $2 }'
}
best() { sort -g | head -1; }
base=$(for i in 1 2 3; do cpu "$WORK" -n 1000; done | best)
prof=$(for i in 1 2 3; do
    cpu env LD_PRELOAD=$AGENT DCPI_AGENT_RING=$T/ring DCPI_AGENT_RATE=100 DCPI_AGENT_BURST=16 \
        "$WORK" -n 1000
    rm -f "$T"/ring.*
done | best)
ratio=$(awk -v a="$prof" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
echo "agent cost: ${prof}s vs ${base}s CPU = ${ratio}x (16-instruction bursts, 100 bursts/s)"
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }' || fail "agent cost ${ratio}x above 1.10x"
echo "PASS"

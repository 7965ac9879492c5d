#!/bin/bash
# agent_overhead.sh - libdcpi-agent.so end to end: work-step's output is byte-identical with and
# without the agent (plain, fork+threads+exec, own SIGTRAP/SIGPROF handlers, blocked signals),
# and ring files appear per process image. The agent's CPU cost is a benchmark, not a test
# (bench/step_overhead.sh runs it against the unprofiled program and valgrind, bench/RESULTS.md).
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

echo "PASS"

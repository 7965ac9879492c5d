#!/bin/bash
# values_procs.sh - value samples uniform over executions across threads and processes (issue
# 21): the default value backend for a command (inproc: each thread arms its own breakpoints at
# ticks of its own CPU time; a child process takes the agent with the environment) at its
# defaults against samples/work-phased's exact per-execution truth (samples/vp-acc.so reading
# the divisor of one `div rcx`) for two threads running one loop with different mixes, one of
# them a quarter of the time, and for child processes started and ended during the run (the
# divisor by the iteration's place). Each run until at least 1000 value samples (lib/phased.sh),
# then every share within the binomial tolerance of its count. Arming at the next drain, the bp
# backend read 29.0/13.3/57.7 for the threads' 49.1/26.0/24.9. Skips (77) when cpu-clock
# sampling or execute breakpoints are unavailable.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-values-procs.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/phased.sh"
phased_probe
for mode in ${MODES:-threads spawn}; do
    phased_check "$mode"
done
echo "PASS: thread and process mixes within binomial tolerance"

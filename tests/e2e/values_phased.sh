#!/bin/bash
# values_phased.sh - value samples uniform over executions on phased programs (issue 21): the bp
# backend at its defaults against samples/work-phased's exact per-execution truth, with the
# accuracy plugin samples/vp-acc.so reading the divisor of one `div rcx`, for two loops called in
# turn with calls of 16 to 33554432 iterations (the divisor by the iteration's place in its call),
# one routine called from two sites with different mixes, and a recursion (the divisor by depth).
# Each run until at least 1000 value samples (lib/phased.sh), then every share within the binomial
# tolerance of its count. Arming at the next drain, the backend read 59.6/20.4/20.0 for the
# phased 66.0/21.5/12.5 and 23.5/33.1/43.4 for the call sites' 58.3/23.3/18.3. Skips (77) when
# cpu-clock sampling or execute breakpoints are unavailable.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-values-phased.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/phased.sh"
for f in dcpid dcpilist samples/work-phased samples/vp-acc.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
phased_probe
for mode in ${MODES:-phased callsites recurse}; do
    phased_check "$mode"
done
echo "PASS: phased, call-site and recursion mixes within binomial tolerance"

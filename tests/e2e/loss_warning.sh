#!/bin/bash
# loss_warning.sh - samples dcpid cannot attribute are said, not only counted: a command whose
# time is in anonymous executable memory (samples/work-jit: a loop copied into an mmap'd page,
# as a JIT's code is) leaves most of its samples outside every known image; at exit dcpid -- cmd
# prints one warning line naming the event, the share and the cause. A command whose samples are
# all attributed prints none. (dcpiprof's warning for a loss over 1% is prof_synthetic.sh's.)
# Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-loss.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
to 60 "$BIN/dcpid" -db "$T/jit" -event cpu-clock -- "$BIN/samples/work-jit" 1000 >/dev/null 2>"$T/jit.err" ||
    fail "dcpid -- work-jit failed: $(cat "$T/jit.err")"
grep -Eq '^dcpid: warning: event cpu-clock lost [0-9.]+% of its samples \([0-9]+ of [0-9]+: ring overflow or throttling, [0-9]+ throttle records\) and left [0-9.]+% unattributed \([0-9]+ outside every known image\)$' \
    "$T/jit.err" || fail "no loss warning for a JIT-like command: $(cat "$T/jit.err")"
pct=$(sed -nE 's/.* and left ([0-9.]+)% unattributed.*/\1/p' "$T/jit.err")
awk -v p="$pct" 'BEGIN { exit !(p > 50) }' || fail "only $pct% unattributed: $(cat "$T/jit.err")"
to 60 "$BIN/dcpid" -db "$T/ok" -event cpu-clock -- "$BIN/samples/work-demo" -n 300 >/dev/null 2>"$T/ok.err" ||
    fail "dcpid -- work-demo failed: $(cat "$T/ok.err")"
grep -q 'warning' "$T/ok.err" && fail "a warning for an attributed run: $(cat "$T/ok.err")"
echo "PASS: $(cat "$T/jit.err")"

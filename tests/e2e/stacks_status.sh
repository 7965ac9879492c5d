#!/bin/bash
# stacks_status.sh - a system-wide dcpid -g counts call chains: while work-demo runs, dcpictl
# status shows "stacks chains N lost L truncated T" with N > 0, and the daemon writes
# DB/<epoch>/<platform>/stacks/cpu-clock.stk (split from stacks_live.sh, which ran this part
# only as root and passed without it otherwise).
# Skips (77) when system-wide cpu-clock sampling with call chains is not possible here (not root
# and perf_event_paranoid > 0, or perf_event_open refused).
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
W=$BIN/samples/work-demo
T=$(mktemp -d /tmp/dcpi-e2e-stacks-status.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for f in dcpid dcpictl samples/work-demo; do
    [ -x "$BIN/$f" ] || fail "$BIN/$f not built"
done

e2e_probe_cpu_clock "cpu-clock sampling with call chains" -g
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
[ "$(id -u)" = 0 ] || [ "$paranoid" -le 0 ] ||
    e2e_skip "system-wide sampling needs root or CAP_PERFMON (perf_event_paranoid $paranoid)"

out=$(to 30 "$BIN/dcpid" -db "$T/sys" -event cpu-clock -g 2>&1) || {
    case "$out" in
    *perf_event_open*) e2e_skip "system-wide cpu-clock sampling is not possible here: $out" ;;
    esac
    fail "dcpid -g daemon did not start: $out"
}
to 10 "$W" 300 >/dev/null 2>&1
st=$(to 30 "$BIN/dcpictl" -db "$T/sys" status)
dpid=$(awk '/^pid / {print $2}' <<<"$st")
to 30 "$BIN/dcpictl" -db "$T/sys" quit >/dev/null || fail "quit failed"
for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
line=$(grep '^stacks chains ' <<<"$st")
[[ "$line" =~ ^stacks\ chains\ ([0-9]+)\ lost\ ([0-9]+)\ truncated\ ([0-9]+)$ ]] ||
    fail "status has no stacks line: $st"
[ "${BASH_REMATCH[1]}" -gt 0 ] || fail "status: no chains counted: $line"
ls "$T"/sys/*/*/stacks/cpu-clock.stk >/dev/null 2>&1 || fail "daemon wrote no stack file"
echo "status: $line"
echo "PASS"

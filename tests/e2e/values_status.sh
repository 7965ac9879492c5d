#!/bin/bash
# values_status.sh - a system-wide dcpid -vtrace vp-classic -vrate 50 shows its value profiler in
# dcpictl status: "vtrace vp-classic traces T values V seen S lost L errors 0 missing M", "vrate 50/s
# per CPU" and the bp backend's "vbp arms ..." (or "vbp off: REASON") (split from values.sh, which ran this part only as root and passed without it).
# Skips (77) when system-wide cpu-clock sampling with user registers is not possible here (not
# root and perf_event_paranoid > 0, or perf_event_open refused).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-values-status.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for f in dcpid dcpictl plugins/vp-classic.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
[ "$(id -u)" = 0 ] || [ "$paranoid" -le 0 ] ||
    e2e_skip "system-wide sampling needs root or CAP_PERFMON (perf_event_paranoid $paranoid)"

out=$(to 30 "$BIN/dcpid" -db "$T/sys" -vtrace vp-classic -vrate 50 2>&1) || {
    case "$out" in
    *perf_event_open*) e2e_skip "system-wide sampling with user registers is not possible here: $out" ;;
    esac
    fail "daemon did not start: $out"
}
st=$(to 30 "$BIN/dcpictl" -db "$T/sys" status)
dpid=$(awk '/^pid / {print $2}' <<<"$st")
to 30 "$BIN/dcpictl" -db "$T/sys" quit >/dev/null || fail "quit failed"
for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
grep -q '^vtrace vp-classic traces [0-9]* values [0-9]* seen [0-9]* lost [0-9]* errors 0 missing [0-9]*$' \
    <<<"$st" || fail "status has no vtrace line: $st"
grep -q '^vrate 50/s per CPU$' <<<"$st" || fail "status has no vrate line: $st"
# system-wide too the backend says what it does: the bp backend's counters, or why it is off
grep -Eq '^vbp (arms [0-9]+ failed [0-9]+ expired [0-9]+ nothing-to-arm [0-9]+ first-dropped [0-9]+ samples [0-9]+ memory-read [0-9]+ late [0-9]+|off: .+)' \
    <<<"$st" || fail "status has no vbp line: $st"
echo "$st" | grep -E '^(vtrace|vrate|vbp) '
echo "PASS"

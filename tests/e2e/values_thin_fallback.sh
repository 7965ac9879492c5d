#!/bin/bash
# values_thin_fallback.sh - without BPF the bp backend keeps a fixed-period arm trigger and says
# so (docs/dcpid.md BP BACKEND): dcpid -vtrace vp-acc -vbp run as the unprivileged user nobody
# (setpriv; BPF programs on perf events need CAP_BPF and CAP_PERFMON) on samples/work-phased
# callsites logs "arm triggers at a fixed period (REASON)" with the reason the thinning program
# could not load, ends with "triggers fixed-period", and still takes value samples with its
# execute breakpoints. Skips (77) without root (setpriv to nobody), when nobody cannot run the
# build's programs (a build directory nobody may not enter), when nobody may not open cpu-clock
# events or execute breakpoints of its own process (perf_event_paranoid), or when nobody can
# load the program after all (then there is no fallback to see here).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-values-thin-fb.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for f in dcpid samples/vp-acc.so samples/work-phased; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
[ "$(id -u)" = 0 ] || e2e_skip "running as nobody needs root (setpriv)"
e2e_need setpriv "setpriv (util-linux) is missing"
chmod 777 "$T"
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$T" "$@"; }
asnobody test -x "$BIN/dcpid" -a -r "$BIN/samples/vp-acc.so" ||
    e2e_skip "the user nobody cannot run $BIN/dcpid (a directory on the way is closed to others)"

ACC_MNEM=div ACC_VALUE=rcx asnobody timeout -k 5 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock \
    -vtrace "$BIN/samples/vp-acc.so" -vbp -- "$BIN/samples/work-phased" callsites 1500 \
    >"$T/out" 2>"$T/err"
rc=$?
log=$(cat "$T"/db/dcpid-*.log 2>/dev/null)
if [ "$rc" != 0 ]; then
    case "$(cat "$T/err")" in
    *perf_event_open*) e2e_skip "nobody may not open cpu-clock events here: $(tail -1 "$T/err")" ;;
    esac
    fail "dcpid as nobody failed ($rc): $(cat "$T/err")"
fi
case "$log" in
*"execute breakpoints unavailable"*) e2e_skip "nobody may not set execute breakpoints here" ;;
*"arm triggers are PC samples kept at random"*)
    e2e_skip "nobody can load the thinning program here: no fallback to see" ;;
esac
why=$(grep -o 'arm triggers at a fixed period ([^)]*)' <<<"$log" | head -1)
[ -n "$why" ] || fail "no warning of fixed-period triggers: $log"
grep -q 'trigger thinning: BPF [a-z]*: .' <<<"$why" || fail "the warning names no reason: $why"
grep -q 'triggers fixed-period$' <<<"$log" || fail "the exit line does not say fixed-period: $log"
n=$(sed -nE 's/.*bp backend: ([0-9]+) arms, ([0-9]+) value samples.*/\2/p' <<<"$log" | tail -1)
[ "${n:-0}" -gt 0 ] || fail "no value samples with fixed-period triggers: $log"
echo "$why; $n value samples"
echo "PASS"

#!/bin/bash
# vstep_ptrace.sh - dcpid -vstep -p PID (ptrace bursts) end to end:
#   1. work-step -w runs in the background; `dcpid -vtrace vp-classic -vstep -p PID` until
#      dcpictl status shows "vstep ptrace bursts B steps S" with B >= 8 (polled, at most 10 s),
#      then `dcpictl quit` detaches:
#      the target keeps running (not stopped, not traced), and after SIGTERM its output equals
#      an unprofiled run's; value profiles were written, and the sys_mask load's value (which
#      the regs backend cannot give) is 0xfff in 100% of its vsamples;
#   2. SIGTERM to dcpid (once it steps: status B > 0) detaches the same way;
#   3. a target that exits while attached (work-step -w ends on the SIGTERM it is sent once dcpid
#      steps it: the signal goes through the tracer) ends dcpid (status 0) with its output
#      unchanged.
# Skips (77) when cpu-clock sampling or ptrace is not permitted here.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
W=$BIN/samples/work-step
T=$(mktemp -d /tmp/dcpi-e2e-vstepp.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for f in dcpid dcpilist dcpictl samples/work-step plugins/vp-classic.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
[ "$scope" -lt 3 ] || { echo "SKIP: ptrace is disabled (yama ptrace_scope $scope)"; exit 77; }

# start work-step -w in the background; waits for its "ready"
start_target() {
    "$W" -w >"$1" 2>&1 &
    TPID=$!
    PIDS+=("$TPID")
    for _ in $(seq 100); do grep -q ready "$1" && return 0; sleep 0.05; done
    fail "work-step -w did not start: $(cat "$1")"
}
# the target must run: not stopped, not traced
check_free() {
    kill -0 "$1" 2>/dev/null || fail "target $1 is gone"
    local state tracer
    state=$(awk '/^State:/ {print $2}' "/proc/$1/status")
    tracer=$(awk '/^TracerPid:/ {print $2}' "/proc/$1/status")
    [ "$state" != T ] && [ "$state" != t ] || fail "target $1 left stopped (state $state)"
    [ "$tracer" = 0 ] || fail "target $1 still traced by $tracer"
}
stop_target() {
    kill -TERM "$1"
    wait "$1" || fail "target exited with status $?"
}
# stepping DB DPID MIN: polls dcpictl status (every 0.1 s, at most 10 s) until its "vstep ptrace
# bursts B steps S" line has B >= MIN, leaving it in $line and the status in $st; returns 2 when
# dcpid DPID exited first, 1 when the bound passed
stepping() {
    st= line=
    for _ in $(seq 100); do
        sleep 0.1
        kill -0 "$2" 2>/dev/null || return 2
        st=$(to 10 "$BIN/dcpictl" -db "$1" status 2>/dev/null) || continue
        line=$(grep '^vstep ptrace' <<<"$st")
        [[ "$line" =~ ^vstep\ ptrace\ bursts\ ([0-9]+)\ steps\ ([0-9]+)$ ]] &&
            [ "${BASH_REMATCH[1]}" -ge "$3" ] && [ "${BASH_REMATCH[2]}" -gt 0 ] && return 0
    done
    return 1
}

# unprofiled reference (work-step -w runs at least one round, however early SIGTERM comes)
start_target "$T/plain.out"
stop_target "$TPID"
plain=$(cat "$T/plain.out")

# --- 1. dcpictl quit
start_target "$T/t1.out"
to 60 "$BIN/dcpid" -db "$T/db" -event cpu-clock -vtrace vp-classic -vstep -p "$TPID" \
    >"$T/d1.out" 2>&1 &
dpid=$!
stepping "$T/db" "$dpid" 8
rc=$?
if [ $rc = 2 ]; then
    wait "$dpid"
    msg=$(cat "$T/d1.out")
    case "$msg" in
    *ptstep*|*ptrace*|*"Operation not permitted"*)
        echo "SKIP: ptrace is not permitted here: $msg"; exit 77 ;;
    esac
    fail "dcpid -vstep -p exited early: $msg"
fi
[ $rc = 0 ] || fail "no vstep ptrace line with 8 bursts in 10 s: ${line:-$st}"
echo "status: $line"
to 30 "$BIN/dcpictl" -db "$T/db" quit >/dev/null || fail "dcpictl quit failed"
wait "$dpid" || fail "dcpid exited with status $?: $(cat "$T/d1.out")"
check_free "$TPID"
sleep 0.3
check_free "$TPID"
stop_target "$TPID"
[ "$(cat "$T/t1.out")" = "$plain" ] || fail "target output '$(cat "$T/t1.out")' vs '$plain'"
find "$T/db" -name vp-classic.vprof | grep -q work-step || fail "no work-step vp-classic.vprof"
to 60 "$BIN/dcpilist" -db "$T/db" -asm -vtrace vp-classic -vshow 8 -vcutoff 0 step_loop "$W" \
    >"$T/list" 2>&1 || fail "dcpilist failed: $(cat "$T/list")"
ld=$(grep -E 'mov +rax, qword ptr \[0x[0-9A-Fa-f]+\]' "$T/list")
grep -q '(100.0% 0xfff)' <<<"$ld" || fail "the sys_mask load is not 0xfff at 100%: $ld"
echo "vp-classic: ${ld//  / }"

# --- 2. SIGTERM to dcpid
start_target "$T/t2.out"
"$BIN/dcpid" -db "$T/db2" -event cpu-clock -vtrace vp-classic -vstep -p "$TPID" \
    >"$T/d2.out" 2>&1 & # no timeout(1) between: the signal goes to dcpid itself
dpid=$!
PIDS+=("$dpid")
stepping "$T/db2" "$dpid" 1 || fail "dcpid (db2) not stepping: ${line:-$st} $(cat "$T/d2.out")"
kill -TERM "$dpid"
wait "$dpid" || fail "dcpid after SIGTERM: status $?: $(cat "$T/d2.out")"
check_free "$TPID"
stop_target "$TPID"
[ "$(cat "$T/t2.out")" = "$plain" ] || fail "target output after SIGTERM: '$(cat "$T/t2.out")'"

# --- 3. the target exits while attached
start_target "$T/t3.out"
to 60 "$BIN/dcpid" -db "$T/db3" -event cpu-clock -vtrace vp-classic -vstep -p "$TPID" \
    >"$T/d3.out" 2>&1 &
dpid=$!
PIDS+=("$dpid")
stepping "$T/db3" "$dpid" 1 || fail "dcpid (db3) not stepping: ${line:-$st} $(cat "$T/d3.out")"
stop_target "$TPID"
wait "$dpid" || fail "dcpid when the target exited: status $?: $(cat "$T/d3.out")"
[ "$(cat "$T/t3.out")" = "$plain" ] || fail "target output '$(cat "$T/t3.out")' vs '$plain'"
echo "PASS"

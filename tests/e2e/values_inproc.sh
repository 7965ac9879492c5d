#!/bin/bash
# values_inproc.sh - the inproc backend (docs/dcpid.md INPROC BACKEND), dcpid's default value
# backend for a dynamically linked command: the command's threads arm their own breakpoints.
#   1. work-step -t 1 (two threads) -f (a forked child) -x (an exec): the log names the inproc
#      backend; the exit line counts ticks, arms and hits in at least 3 processes and the
#      handler runs the agents timed (the budget's live cost, at least the start-up model); the loaded
#      value of `add rbx, [r14+rax*8]` (work-step's table: 0x1111 in 75% of the executions,
#      0x2222 in 25%, read by the agent at the hit) within the binomial tolerance of its count,
#      run until it has at least 1000 value samples (stat_until); no ring file left afterwards;
#      the exit line counts the arm window's closing ticks, none with DCPI_AGENT_WINDOW_US=0,
#      whose hits DCPI_AGENT_DUMP also writes to a file, as many as the exit line counts.
#      rflags at a hit (work-accuracy branch's jbe): exactly 0x297 and 0x202, the program's flags
#      without the resume flag the kernel sets at a breakpoint, 0x297 within tolerance of 80%.
#   2. work-step -s: the program's own SIGTRAP and SIGPROF handlers get exactly what they get
#      without dcpid (the agent forwards what is not its own).
#   3. -vbp, a statically linked command and a missing agent (DCPI_AGENT_PATH) take the bp
#      backend, the last two with a warning naming the reason.
# Skips (77) without cpu-clock sampling or execute breakpoints.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-inproc.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
for f in dcpid dcpilist samples/work-step samples/vp-acc.so libdcpi-agent.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
W=$BIN/samples/work-step
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
export ACC_MNEM=add ACC_VALUE=memval
to 60 "$BIN/dcpid" -db "$T/probe2" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" -- true \
    >"$T/probe2.out" 2>&1 || fail "probe run failed: $(cat "$T/probe2.out")"
grep -q "execute breakpoints unavailable" "$T"/probe2/dcpid-*.log &&
    e2e_skip "execute breakpoints unavailable: $(grep -ho 'unavailable (.*' "$T"/probe2/dcpid-*.log)"
grep -q "inproc backend" "$T"/probe2/dcpid-*.log ||
    fail "a command's default value backend is not inproc: $(cat "$T"/probe2/dcpid-*.log)"

# ---- 1. threads, a fork, an exec: shares of the loaded value
NMIN=1000
run() {
    rm -rf "${T:?}/db"
    # -vbudget 4: four times the default's volume (the volume, not the mechanism)
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" -vbudget 4 \
        -- "$W" -n $(($(stat_ms 3600) * $1 / 10)) -t 1 -f -x >"$T/out" 2>"$T/err" ||
        fail "dcpid failed: $(cat "$T/err")"
    DCPI_PLUGIN_PATH= to 60 "$BIN/dcpilist" -db "$T/db" -asm -vtrace "$BIN/samples/vp-acc.so" \
        -vshow 8 -vcutoff 0 step_loop "$W" >"$T/list" 2>&1 || grep -q 'no value profile' "$T/list" ||
        fail "dcpilist: $(cat "$T/list")"
}
count() {
    local l
    l=$(grep -E 'add +rbx, qword ptr \[r14\+rax\*8\]' "$T/list" | head -1)
    n=$(vtot "$l")
    [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo 0
}
stat_until $NMIN 8 run count
grep -q "value profiling: 1 plugins, inproc backend" "$T"/db/dcpid-*.log ||
    fail "the log names no inproc backend: $(grep 'value profiling' "$T"/db/dcpid-*.log)"
exitline=$(grep -ho 'inproc backend: [0-9]* processes.*' "$T"/db/dcpid-*.log)
[[ $exitline =~ ^inproc\ backend:\ ([0-9]+)\ processes,\ ([0-9]+)\ ticks,\ ([0-9]+)\ arms,\ ([0-9]+)\ hits ]] ||
    fail "no exit line with the agents' counters: $(tail -5 "$T"/db/dcpid-*.log)"
[ "${BASH_REMATCH[1]}" -ge 3 ] ||
    fail "arms in ${BASH_REMATCH[1]} processes, want 3 (work-step, its child, its exec): $exitline"
[ "${BASH_REMATCH[2]}" -gt 0 ] && [ "${BASH_REMATCH[4]}" -gt 0 ] || fail "no ticks or hits: $exitline"
# the agents timed their handlers: the budget's cost of a tick is what this run paid, not the
# start-up measurement alone (it is at least the start-up model of a tick)
[[ $exitline =~ us\ in\ the\ agent.s\ handlers\ a\ tick\ \(([0-9]+)\ runs\ measured\) ]] &&
    [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "no handler runs measured: $exitline"
echo "inproc: $exitline"
# the arm window's closing ticks are counted (a number: how many depends on how soon the armed
# instructions run on this CPU), and none are taken with the window off
[[ $exitline =~ runs\ measured\),\ ([0-9]+)\ ticks\ that\ closed\ arms ]] ||
    fail "no count of the arm window's closing ticks: $exitline"
DCPI_AGENT_DUMP=$T/dump DCPI_AGENT_WINDOW_US=0 to 120 "$BIN/dcpid" -db "$T/nowin" -event cpu-clock \
    -vtrace "$BIN/samples/vp-acc.so" -vbudget 4 -- "$W" -n "$(stat_ms 300)" >/dev/null 2>"$T/nowin.err" ||
    fail "dcpid with DCPI_AGENT_WINDOW_US=0 failed: $(cat "$T/nowin.err")"
nowin=$(grep -ho 'inproc backend: [0-9]* processes.*' "$T"/nowin/dcpid-*.log)
[[ $nowin =~ ([0-9]+)\ hits.*\ 0\ ticks\ that\ closed\ arms ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    fail "DCPI_AGENT_WINDOW_US=0: want hits and no closing tick: $nowin"
# DCPI_AGENT_DUMP (bench/arm_starts.sh): the one process's hits, each a step_record_t (456
# bytes), also appended to DUMP.<pid>: as many as the exit line counts
dumps=("$T"/dump.*)
[ ${#dumps[@]} -eq 1 ] && [ -f "${dumps[0]}" ] || fail "DCPI_AGENT_DUMP: want one file, got: ${dumps[*]}"
dsize=$(stat -c %s "${dumps[0]}")
[ $((dsize % 456)) -eq 0 ] && [ $((dsize / 456)) -eq "${BASH_REMATCH[1]}" ] ||
    fail "DCPI_AGENT_DUMP: $dsize bytes, want ${BASH_REMATCH[1]} records of 456: $nowin"
sum=$(grep -o "inproc backend: [0-9]* value samples.*" "$T/err" | head -1)
[[ $sum =~ at\ ([0-9]+)\ us\ a\ tick\ with\ its\ arms\ in\ this\ run\ \(([0-9]+)\ us\ a\ tick ]] &&
    [ "${BASH_REMATCH[1]}" -ge "${BASH_REMATCH[2]}" ] || fail "no live cost in the exit summary: $sum"
line=$(grep -E 'add +rbx, qword ptr \[r14\+rax\*8\]' "$T/list" | head -1)
n=$(vtot "$line")
stat_min "the add's value samples" "$n" $NMIN || fail "too few: $line"
share() { grep -o "([0-9.]*% $1)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1; }
stat_share_line "table load 0x1111" "$(share 0x1111)" 75 "$line" || fail "$line"
stat_share_line "table load 0x2222" "$(share 0x2222)" 25 "$line" || fail "$line"
grep -q 'backend inproc' "$T/list" || fail "dcpilist does not name the backend: $(tail -3 "$T/list")"
dpid=$(grep -ho 'dcpid\[[0-9]*\]' "$T"/db/dcpid-*.log | head -1 | tr -dc 0-9)
[ -n "$dpid" ] || fail "no dcpid pid in the log"
left=$(ls /dev/shm | grep -c "^dcpi-arm-$dpid\." || true)
[ "$left" -eq 0 ] || fail "$left ring files of dcpid $dpid left in /dev/shm"

# ---- 1b. rflags at a hit: the program's flags, not the breakpoint's resume flag (RF, bit 16,
# which the kernel sets in the hit's context; it read 0x10246 where the exact count had 0x246).
# work-accuracy branch's jbe follows `cmp $1, x`: its flags before are 0x297 (x = 0: CF PF AF
# SF) in 80% of the executions and 0x202 (x = 2) in 20%, nothing else
FLMIN=200
frun() {
    rm -rf "${T:?}/fl"
    ACC_MNEM=jbe ACC_VALUE=rflags to 120 "$BIN/dcpid" -db "$T/fl" -event cpu-clock \
        -vtrace "$BIN/samples/vp-acc.so" -- "$BIN/samples/work-accuracy" branch \
        $(($(stat_ms 1600) * $1)) >/dev/null 2>"$T/fl.err" || fail "dcpid (rflags) failed: $(cat "$T/fl.err")"
    DCPI_PLUGIN_PATH= to 60 "$BIN/dcpilist" -db "$T/fl" -asm -vtrace "$BIN/samples/vp-acc.so" \
        -vshow 8 -vcutoff 0 acc_branch "$BIN/samples/work-accuracy" >"$T/fl.list" 2>&1 ||
        grep -q 'no value profile' "$T/fl.list" || fail "dcpilist (rflags): $(cat "$T/fl.list")"
}
fcount() { n=$(vtot "$(grep -E ' jbe ' "$T/fl.list" | head -1)"); [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo 0; }
stat_until $FLMIN 8 frun fcount
line=$(grep -E ' jbe ' "$T/fl.list" | head -1)
n=$(vtot "$line")
stat_min "the jbe's rflags value samples" "$n" $FLMIN || fail "too few: $line"
vals=$(grep -o '([0-9.]*% 0x[0-9a-f]*)' <<<"$line" | awk '{print $2}' | tr -d ')' | sort | tr '\n' ' ')
[ "$vals" = "0x202 0x297 " ] || fail "the jbe's flags are not exactly 0x297 and 0x202: $line"
stat_share_line "jbe's flags 0x297 (taken)" "$(share 0x297)" 80 "$line" || fail "$line"

# ---- 2. the program's own SIGTRAP and SIGPROF
want=$("$W" -s -n 2 2>/dev/null | grep sigtrap)
to 120 "$BIN/dcpid" -db "$T/sig" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" -- "$W" -s -n 2 \
    >"$T/sig.out" 2>"$T/sig.err" || fail "dcpid -- work-step -s failed: $(cat "$T/sig.err")"
got=$(grep sigtrap "$T/sig.out")
[ -n "$want" ] && [ "$got" = "$want" ] ||
    fail "the program's own signals: '$got' under the inproc backend, '$want' without dcpid"
grep -q "inproc backend: [0-9]* value samples" "$T/sig.err" || fail "work-step -s: not inproc"
echo "program signals: $got"

# ---- 3. where the bp backend is used instead
to 60 "$BIN/dcpid" -db "$T/vbp" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" -vbp -- true \
    >/dev/null 2>&1 || fail "-vbp run failed"
grep -q "value profiling: 1 plugins, bp backend" "$T"/vbp/dcpid-*.log || fail "-vbp: not the bp backend"
printf 'int main(void) { volatile long x = 0; for (long i = 0; i < 1000000; i++) x += i; return 0; }\n' >"$T/st.c"
gcc -static -O1 -o "$T/static" "$T/st.c" 2>"$T/gcc.err" || fail "gcc -static: $(cat "$T/gcc.err")"
to 60 "$BIN/dcpid" -db "$T/static.db" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" -- "$T/static" \
    >/dev/null 2>&1 || fail "static run failed"
grep -q "not the inproc one (.*statically linked" "$T"/static.db/dcpid-*.log ||
    fail "a static command: no warning: $(grep 'value profiling' "$T"/static.db/dcpid-*.log)"
grep -q "value profiling: 1 plugins, bp backend" "$T"/static.db/dcpid-*.log || fail "static: not bp"
DCPI_AGENT_PATH=$T/missing.so to 60 "$BIN/dcpid" -db "$T/noagent" -event cpu-clock \
    -vtrace "$BIN/samples/vp-acc.so" -- true >/dev/null 2>&1 || fail "no-agent run failed"
grep -q "not the inproc one (.*missing.so" "$T"/noagent/dcpid-*.log ||
    fail "a missing agent: no warning: $(grep 'value profiling' "$T"/noagent/dcpid-*.log)"
echo "PASS: inproc shares 0x1111 $(share 0x1111)% / 0x2222 $(share 0x2222)% (n $n) across threads, a fork and an exec; program signals kept; -vbp, static and no-agent fall back to bp"

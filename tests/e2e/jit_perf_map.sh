#!/bin/bash
# jit_perf_map.sh - JIT code is named from /tmp/perf-PID.map and keeps its process (issue 13
# item 4): samples/work-jit runs a loop it copied into anonymous executable memory and names it
# "jit_countdown" in a perf map, as LuaJIT, node or a JVM agent do. dcpiprof must show
# jit_countdown in the image "[jit pid N]" (N the command's pid), with the share perf report
# gives it on a run of the same command (binomial tolerance of both sample counts), and dcpid
# must not warn about unattributed samples. Skips (77) without cpu-clock or perf.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-jit.XXXXXX)
trap 'for p in $PIDS; do rm -f /tmp/perf-$p.map; done; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
PIDS=
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
export WORK_JIT_KEEP_MAP=1 # the map outlives the run, as real JITs leave theirs
# 1 s of the loop, each run redone 2 and 4 s long until it has 500 samples (lib/stats.sh)
run() {
    rm -rf "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$BIN/samples/work-jit" $(($(stat_ms 1000) * $1)) map >/dev/null 2>"$T/err" ||
        fail "dcpid -- work-jit failed: $(cat "$T/err")"
    grep -q 'warning' "$T/err" && fail "a warning for a run whose JIT code has a perf map: $(cat "$T/err")"
    "$BIN/dcpiprof" -db "$T/db" >"$T/prof" 2>&1 || fail "dcpiprof failed: $(cat "$T/prof")"
    total=$(awk '$1 == "cpu-clock" && NF == 4 {print $2; exit}' "$T/prof")
    PIDS="$PIDS $(sed -nE 's/.*\[jit pid ([0-9]+)\]$/\1/p' "$T/prof" | head -1)"
}
count() { echo "$total"; }
stat_until 500 4 run count
row=$(awk '$4 == "jit_countdown"' "$T/prof")
[ -n "$row" ] || fail "jit_countdown not named: $(head -10 "$T/prof")"
pid=$(sed -nE 's/.*\[jit pid ([0-9]+)\]$/\1/p' <<<"$row")
[ -n "$pid" ] || fail "no [jit pid N] image: $row"
ours=$(awk '{sub("%", "", $2); print $2}' <<<"$row")

e2e_require perf linux-perf
prun() {
    to 120 perf record -q -o "$T/perf.data" -e cpu-clock -F 1000 -- "$BIN/samples/work-jit" $(($(stat_ms 1000) * $1)) map >/dev/null 2>"$T/perr" ||
        e2e_skip "perf record cannot run here: $(tail -1 "$T/perr")"
    PIDS="$PIDS $(perf script -i "$T/perf.data" -F pid 2>/dev/null | awk 'NF {print $1; exit}')"
    pn=$(perf script -i "$T/perf.data" -F ip 2>/dev/null | wc -l)
}
pcount() { echo "$pn"; }
stat_until 500 4 prun pcount
theirs=$(perf report -i "$T/perf.data" --stdio --sort sym 2>/dev/null | awk '$NF == "jit_countdown" {sub("%", "", $1); print $1; exit}')
[ -n "$theirs" ] || fail "perf does not name jit_countdown either (perf map not read?)"
stat_min "dcpi samples" "$total" 500 || fail "too few samples"
stat_min "perf samples" "$pn" 500 || fail "too few perf samples"
stat_same "jit_countdown share, dcpi vs perf" "$ours" "$total" "$theirs" "$pn" || fail "shares differ"
# a map that spans the whole address space (entries at 0x1000 and 0x7ffffffff000, and one
# inside work-jit's own text, as node's map names its builtins inside its binary): jit_countdown
# keeps perf's share, and the program's own code keeps its ELF name
MODE=widemap
run() {
    rm -rf "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$BIN/samples/work-jit" $(($(stat_ms 1000) * $1)) $MODE >/dev/null 2>"$T/err" ||
        fail "dcpid -- work-jit $MODE failed: $(cat "$T/err")"
    "$BIN/dcpiprof" -db "$T/db" >"$T/prof" 2>&1 || fail "dcpiprof failed: $(cat "$T/prof")"
    total=$(awk '$1 == "cpu-clock" && NF == 4 {print $2; exit}' "$T/prof")
    PIDS="$PIDS $(sed -nE 's/.*\[jit pid ([0-9]+)\]$/\1/p' "$T/prof" | head -1)"
}
stat_until 500 4 run count
wide=$(awk '$4 == "jit_countdown" {sub("%", "", $2); print $2}' "$T/prof")
[ -n "$wide" ] || fail "a map spanning the address space: jit_countdown not named: $(head -10 "$T/prof")"
grep -q 'builtin_in_binary' "$T/prof" && fail "an entry inside the program's text took its samples from the ELF"
jd=$(ls -d "$T"/db/*/*/jit_pid_*) # (not work-jit_ID, the program's own image)
grep -q ' far_high$' "$jd/jitmap" && grep -q ' far_low$' "$jd/jitmap" ||
    fail "jitmap lacks the far entries: $(cat "$jd/jitmap")"
stat_min "dcpi samples (wide map)" "$total" 500 || fail "too few samples"
stat_same "jit_countdown share, wide map vs perf" "$wide" "$total" "$theirs" "$pn" || fail "shares differ"
echo "PASS: jit_countdown in [jit pid $pid]: dcpi $ours% (n $total), perf $theirs% (n $pn); a map spanning the address space: $wide%"

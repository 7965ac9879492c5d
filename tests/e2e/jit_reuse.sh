#!/bin/bash
# jit_reuse.sh - a JIT that reuses the addresses of code it dropped (node after a deoptimisation
# and a collection of its code space) has two perf map lines over the same code: each sample is
# named by the line written last BEFORE the sample was taken, not by whichever line a report
# picks from the final map (before: dcpi named all of them by the shorter/first name, perf by
# the other: 100% jit_new vs 100% jit_old, so node's functions could swap samples between the
# two tools). samples/work-jit reuse runs the loop named jit_old for the first third of its CPU
# time, then writes it again at the same address and names it jit_new: jit_old's share of the two
# is 1/3 (binomial tolerance of their count), each is named at its own offset in the jitmap, and
# the run leaves no sample unattributed; more regions than dcpid names are said once in its log.
# Skips (77) without cpu-clock.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
e2e_counting jitreuse
PIDS=
trap 'for p in $PIDS; do rm -f /tmp/perf-$p.map; done; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
export WORK_JIT_KEEP_MAP=1 # the map outlives the run, as real JITs leave theirs
run() {
    rm -rf "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$BIN/samples/work-jit" $(($(stat_ms 1500) * $1)) reuse >/dev/null 2>"$T/err" ||
        fail "dcpid -- work-jit reuse failed: $(cat "$T/err")"
    grep -q 'warning' "$T/err" && fail "a warning for a run whose JIT code has a perf map: $(cat "$T/err")"
    "$BIN/dcpiprof" -db "$T/db" >"$T/prof" 2>&1 || fail "dcpiprof failed: $(cat "$T/prof")"
    PIDS="$PIDS $(sed -nE 's/.*\[jit pid ([0-9]+)\]$/\1/p' "$T/prof" | head -1)"
    old=$(awk '$4 == "jit_old" {print $1}' "$T/prof")
    new=$(awk '$4 == "jit_new" {print $1}' "$T/prof")
}
count() { echo $((${old:-0} + ${new:-0})); }
stat_until 500 4 run count
[ -n "$old" ] && [ -n "$new" ] || fail "jit_old and jit_new not both named: $(head -8 "$T/prof")"
n=$((old + new))
stat_min "samples of jit_old and jit_new" "$n" 500 || fail "too few samples"
share=$(awk -v a="$old" -v n="$n" 'BEGIN { printf "%.2f", 100 * a / n }')
stat_share "jit_old's share of the reused code" "$share" 33.33 "$n" || fail "jit_old $old, jit_new $new"
jd=$(ls -d "$T"/db/*/*/jit_pid_*)
[ "$(awk '{print $1}' "$jd/jitmap" | sort -u | wc -l)" -eq 2 ] ||
    fail "the two lines do not have their own offsets in the jitmap: $(cat "$jd/jitmap")"
# more (region, generation) pairs than dcpid names (40 entries 64 MiB apart, the map written by
# the process before it execs work-jit): said once in dcpid's log, naming the first left out
rm -rf "$T/db"
to 60 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- sh -c 'for i in $(seq 0 39); do
    printf "%x 10 far_%d\n" $((0x1000000000 + i * 0x4000000)) $i; done >/tmp/perf-$$.map
    echo $$ >"$1"; exec "$0" 100' "$BIN/samples/work-jit" "$T/pid" >/dev/null 2>"$T/err" ||
    fail "dcpid -- sh -c failed: $(cat "$T/err")"
PIDS="$PIDS $(cat "$T/pid")"
n_warn=$(cat "$T"/db/dcpid-*.log 2>/dev/null | grep -c 'more than 32 regions of JIT code.*"1080000000 10 far_32"')
[ "$n_warn" -eq 1 ] || fail "the regions beyond 32 were not said once in dcpid's log: $(cat "$T"/db/dcpid-*.log)"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: reused JIT addresses named by time: jit_old $old, jit_new $new samples ($share% old)"

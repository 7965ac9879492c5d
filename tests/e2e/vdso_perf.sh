#!/bin/bash
# vdso_perf.sh - the vDSO is named as perf names it (issue 13 item 3): perl from Debian calling
# clock_gettime in a loop (Time::HiRes) spends a fifth of its time in the vDSO; dcpid saves the
# vDSO image next to its profiles (vdso.so in the [vdso] image directory) and dcpiprof names
# __vdso_clock_gettime, with a share equal to perf's on a run of the same command (perf record
# -e cpu-clock, perf report --sort sym) within the binomial tolerance of the two runs' sample
# counts (lib/stats.sh stat_same). Skips (77) without cpu-clock, perl's Time::HiRes or perf.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-vdso.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
perl_loop() { # SECONDS of the process's own CPU time in clock_gettime
    PERL=(perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e
        "while ((times)[0] < $1) { clock_gettime(CLOCK_MONOTONIC) for 1 .. 1000 }")
}
perl_loop 1
# (1 s of the process's own CPU time, not of the clock: a loaded machine gives the same samples;
# a quarter of it in quick mode, lib/stats.sh stat_ms, where a quarter of the samples is asked;
# each run redone 2 and 4 times as long until it has 500 samples, lib/stats.sh stat_until)
SECS=$(awk -v ms="$(stat_ms 1000)" 'BEGIN { print ms / 1000 }')
"${PERL[@]}" -e 1 2>/dev/null || perl -MTime::HiRes -e 1 2>/dev/null || e2e_skip "perl with Time::HiRes is not installed"
e2e_require perf linux-perf

run() {
    perl_loop "$(awk -v s="$SECS" -v k="$1" 'BEGIN { print s * k }')"
    rm -rf "$T/db"
    to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "${PERL[@]}" >/dev/null 2>"$T/err" ||
        fail "dcpid -- perl failed: $(cat "$T/err")"
    [ -n "$(find "$T/db" -path '*vdso_*/vdso.so')" ] || fail "no vdso.so saved: $(find "$T/db" | head)"
    "$BIN/dcpiprof" -db "$T/db" >"$T/prof" 2>&1 || fail "dcpiprof failed: $(cat "$T/prof")"
    total=$(awk '$1 == "cpu-clock" && NF == 4 {print $2; exit}' "$T/prof")
}
count() { echo "$total"; }
stat_until 500 4 run count
ours=$(awk '$4 == "__vdso_clock_gettime" && $5 == "[vdso]" {sub("%", "", $2); print $2}' "$T/prof")
[ -n "$ours" ] || fail "dcpiprof does not name __vdso_clock_gettime: $(head -12 "$T/prof")"
grep -q 'unknown_rou *\[vdso\]' "$T/prof" && fail "[vdso] time left unnamed: $(grep vdso "$T/prof")"

prun() {
    perl_loop "$(awk -v s="$SECS" -v k="$1" 'BEGIN { print s * k }')"
    to 120 perf record -q -o "$T/perf.data" -e cpu-clock -F 1000 -- "${PERL[@]}" >/dev/null 2>"$T/perr" ||
        e2e_skip "perf record cannot run here: $(tail -1 "$T/perr")"
    perf report -i "$T/perf.data" --stdio --sort sym 2>/dev/null >"$T/report"
    theirs=$(awk '/\] __vdso_clock_gettime$/ {sub("%", "", $1); print $1}' "$T/report")
    pn=$(perf script -i "$T/perf.data" -F ip 2>/dev/null | wc -l) # (the report's header rounds: "2K")
}
pcount() { echo "$pn"; }
stat_until 500 4 prun pcount
[ -n "$theirs" ] && [ -n "$pn" ] || fail "perf does not show __vdso_clock_gettime: $(head -20 "$T/report")"
stat_min "dcpi samples" "$total" 500 || fail "too few samples"
stat_min "perf samples" "$pn" 500 || fail "too few perf samples"
stat_same "__vdso_clock_gettime share, dcpi vs perf" "$ours" "$total" "$theirs" "$pn" ||
    fail "dcpi $ours% of $total, perf $theirs% of $pn"
echo "PASS: __vdso_clock_gettime dcpi $ours% (n $total), perf $theirs% (n $pn)"

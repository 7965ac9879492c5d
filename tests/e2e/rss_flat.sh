#!/bin/bash
# rss_flat.sh - dcpid's resident memory stays flat under process churn (issue 23 item 3; the
# 30-minute version is bench/soak.sh): a system-wide dcpid (-flush 5) beside a shell loop that
# starts /bin/true over and over; its VmRSS is read every 5 s for 100 s. Flat: the median of
# the readings after the first minute (75-100 s) is at most 2 MB above the median of 35-60 s
# (before the fix RSS grew ~8 MB a minute under the same churn: per-process counts of exited
# processes and the count table's pages were never given back; single readings jump by a few
# MB while a flush merges or reads a new image's symbols, so medians are compared); bounded:
# the median under 64 MB (dcpid(1), MEMORY). Also: status reports the memory line. Skips (77) without root or system-wide sampling.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting rss-flat
to() { timeout -k 5 "$@"; }
[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 0 ] ||
    e2e_skip "system-wide sampling needs root or CAP_PERFMON"
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
# (run once, not in make test's ASan pass: its labels say so; by hand under ASan, keep the
# quarantine small so that freed memory is not counted as growth)
[ "${DCPI_SANITIZE:-0}" = 1 ] &&
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:thread_local_quarantine_size_kb=64
D=$T/db
CH=
trap '[ -n "$CH" ] && kill $CH 2>/dev/null; to 60 "$BIN/dcpictl" -db "$D" quit >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
to 30 "$BIN/dcpid" -db "$D" -e cpu-clock -flush 5 2>"$T/start" || { echo "FAIL: dcpid did not start: $(cat "$T/start")"; exit 1; }
# what it started, before it daemonized (issue 23 item 5)
grep -qE "^dcpid: sampling the whole system \(cpu-clock, [0-9]+ Hz per CPU, [0-9]+ CPUs\) into $D, epoch [0-9]{14}$" "$T/start" &&
    grep -qE "^dcpid: daemon pid [0-9]+, log $D/dcpid-[^ ]+\.log; stop it with: dcpictl -db $D quit$" "$T/start" ||
    fail "the start did not say what it started: $(cat "$T/start")"
ST=$(to 60 "$BIN/dcpictl" -db "$D" status) || { echo "FAIL: status: $ST"; exit 1; }
DP=$(echo "$ST" | awk '$1 == "pid" { print $2 }')
echo "$ST" | grep -qE '^memory rss [0-9]+ kB heap [0-9]+ kB in use [0-9]+ kB mmapped [0-9]+ kB$' ||
    fail "status has no memory line: $ST"
nice -n 10 bash -c 'while :; do /bin/true; done' &
CH=$!
rss() { awk '/^VmRSS/ { print $2 }' /proc/"$DP"/status; }
max=0 line=
: >"$T/early"
: >"$T/late"
for t in $(seq 5 5 100); do
    sleep 5
    r=$(rss) || { fail "dcpid $DP is gone"; break; }
    line="$line $t:$r"
    [ "$t" -ge 35 ] && [ "$t" -le 60 ] && echo "$r" >>"$T/early"
    [ "$t" -ge 75 ] && echo "$r" >>"$T/late"
    [ "$r" -gt "$max" ] && max=$r
done
kill $CH
CH=
forks=$(to 60 "$BIN/dcpictl" -db "$D" status | awk '$1 == "flushes" { print $2 }')
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
early=$(median "$T/early") late=$(median "$T/late")
[ "$early" -gt 0 ] && [ "$late" -gt 0 ] || fail "no RSS readings: $line"
[ $((late - early)) -le 2048 ] || fail "RSS grew: median $early kB at 35-60 s, $late kB at 75-100 s: $line"
[ "$late" -le 65536 ] || fail "RSS median $late kB is over the 64 MB bound: $line"
echo "RSS (s:kB):$line; $forks flushes"
[ $fails = 0 ] && echo "ok: RSS median $early kB at 35-60 s, $late kB at 75-100 s, at most $max kB"
exit $((fails > 0))

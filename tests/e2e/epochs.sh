#!/bin/bash
# epochs.sh - epochs over time (issue 23 item 2): one name format (14 digits); a command that
# cannot start (exit 127) leaves no epoch and the previous run stays `latest`; -epoch-every
# rotates during a run, each epoch's epoch.info counts exactly the samples of its profiles;
# dcpictl epochs lists them (start, end, samples, lost, size, state: writing while the daemon
# runs, ended after); -keep DURATION removes the oldest epochs but never the one being written;
# -keep SIZE keeps the platform within the size. Command mode only (no root needed); skips
# (77) when perf_event_open of cpu-clock is not possible here.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
DEMO=$BIN/samples/work-demo
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting epochs
to() { timeout -k 5 "$@"; }
for f in dcpid dcpictl dcpicat dcpiprof samples/work-demo; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_probe_cpu_clock "perf_event_open for cpu-clock"

epochs() { ls "$1" | grep -E '^[0-9]+$'; }
# the sum of every profile's total in one epoch directory (dcpicat's "event TOTAL" line)
prof_sum() {
    local f s=0 n
    while IFS= read -r f; do
        n=$("$BIN/dcpicat" "$f" | awk '$1 == "event" { print $2; exit }')
        s=$((s + ${n:-0}))
    done < <(find "$1" -name '*.prof' -type f)
    echo $s
}

# --- (1) a good run, then a command that cannot start
D=$T/db1
to 60 "$BIN/dcpid" -db "$D" -event cpu-clock -- "$DEMO" 300 >/dev/null 2>"$T/err" ||
    fail "(1) dcpid -- work-demo: $(cat "$T/err")"
GOOD=$(epochs "$D")
[ "$(echo "$GOOD" | wc -l)" = 1 ] || fail "(1) expected one epoch: $GOOD"
echo "$GOOD" | grep -qE '^[0-9]{14}$' || fail "(1) epoch name '$GOOD' is not YYYYMMDDHHMMSS"
# the summary line at exit (issue 23 item 5): samples, lost, images, the epoch's path
grep -qE "^dcpid: [0-9]+ samples \([0-9]+ lost\) in [0-9]+ images, epoch $D/$GOOD/[^/]+$" "$T/err" ||
    fail "(1) no summary line: $(cat "$T/err")"
to 60 "$BIN/dcpid" -db "$D" -event cpu-clock -- /nonexistent/prog >/dev/null 2>"$T/err"
rc=$?
[ $rc = 127 ] || fail "(1) dcpid -- /nonexistent/prog exited $rc, expected 127"
grep -q "/nonexistent/prog: No such file or directory" "$T/err" || fail "(1) no reason: $(cat "$T/err")"
grep -q "samples (" "$T/err" && fail "(1) a summary line for a command that did not start: $(cat "$T/err")"
[ "$(epochs "$D")" = "$GOOD" ] || fail "(1) the failed command left an epoch: $(epochs "$D")"
out=$("$BIN/dcpiprof" -db "$D" 2>&1) || fail "(1) dcpiprof after the failed command: $out"
echo "$out" | grep -q hot_mul || fail "(1) latest is not the good run: $out"
echo "ok (1) a command that cannot start leaves no epoch ($GOOD stays latest)"

# The runs below spin no CPU for the whole run: their workload is work-demo in bursts (WORK_BURST:
# 20 ms of work-demo, 50 ms asleep; samples in every epoch), until what the part checks happened
# (polled, at most 30 s), not for a fixed time.
WORK_BURST="'$DEMO' 20 >/dev/null 2>&1; sleep 0.05"

# --- (2) rotation: -epoch-every 1s over a run that lasts until the third epoch has begun (at
# most 30 s); dcpictl epochs while it runs
D=$T/db2
to 120 "$BIN/dcpid" -db "$D" -event cpu-clock -flush 1 -epoch-every 1s -- \
    sh -c "for i in \$(seq 450); do [ \$(ls '$D' | grep -cE '^[0-9]{14}\$') -ge 3 ] && break; $WORK_BURST; done
           $WORK_BURST" 2>"$T/err2" &
DP=$!
for i in $(seq 100); do
    [ "$(epochs "$D" 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.1
done
live=$(to 30 "$BIN/dcpictl" -db "$D" epochs 2>&1) || fail "(2) dcpictl epochs while running: $live"
echo "$live" | grep -qE '^[0-9]{14} .* writing$' || fail "(2) no epoch 'writing' while running: $live"
wait $DP || fail "(2) dcpid exited $?: $(cat "$T/err2")"
n=$(epochs "$D" | wc -l)
[ "$n" -ge 3 ] || fail "(2) $n epochs after the run with -epoch-every 2s, expected >= 3"
list=$(to 30 "$BIN/dcpictl" -db "$D" epochs) || fail "(2) dcpictl epochs: $list"
[ "$(echo "$list" | head -1 | awk '{ print $1, $2, $3, $4, $5, $6, $7 }')" = "epoch start end samples lost size state" ] ||
    fail "(2) header: $(echo "$list" | head -1)"
[ "$(echo "$list" | tail -n +2 | wc -l)" = "$n" ] || fail "(2) dcpictl epochs lists not $n epochs: $list"
total=0
for e in $(epochs "$D"); do
    row=$(echo "$list" | awk -v e="$e" '$1 == e')
    [ -n "$row" ] || { fail "(2) epoch $e not listed"; continue; }
    st=$(echo "$row" | awk '{ print $7 }')
    [ "$st" = ended ] || fail "(2) epoch $e state '$st' after the run, expected ended"
    s=$(echo "$row" | awk '{ print $4 }')
    p=$(prof_sum "$D/$e")
    [ "$s" = "$p" ] || fail "(2) epoch $e: dcpictl epochs says $s samples, its profiles hold $p"
    total=$((total + p))
done
[ "$total" -gt 0 ] || fail "(2) no samples in any epoch"
echo "ok (2) rotation: $n epochs, samples per epoch equal to their profiles' ($total in all)"

# --- (3) retention by age: -keep 2s with -epoch-every 1s, until the log says an epoch was
# removed and one more second (at most 30 s); the first epochs go, the current one stays while it
# is written
D=$T/db3
to 120 "$BIN/dcpid" -db "$D" -event cpu-clock -flush 1 -epoch-every 1s -keep 2s -- \
    sh -c "for i in \$(seq 450); do grep -qs 'retention: epoch .* removed' '$D'/dcpid-*.log && break; $WORK_BURST; done
           for i in \$(seq 15); do $WORK_BURST; done" 2>"$T/err3" &
DP=$!
for i in $(seq 100); do
    [ "$(epochs "$D" 2>/dev/null | wc -l)" -ge 1 ] && break
    sleep 0.1
done
FIRST=$(epochs "$D" | head -1)
while kill -0 $DP 2>/dev/null; do
    cur=$(to 10 "$BIN/dcpictl" -db "$D" status 2>/dev/null | awk '$1 == "epoch" { print $2 }')
    [ -z "$cur" ] || [ -d "$D/$cur" ] || fail "(3) the epoch being written ($cur) was removed"
    sleep 0.2
done
wait $DP || fail "(3) dcpid exited $?: $(cat "$T/err3")"
[ -n "$FIRST" ] && [ ! -d "$D/$FIRST" ] || fail "(3) the first epoch $FIRST is still there"
grep -q "retention: epoch $FIRST removed" "$D"/dcpid-*.log || fail "(3) the log does not say $FIRST was removed"
n=$(epochs "$D" | wc -l)
[ "$n" -le 6 ] || fail "(3) $n epochs left with -keep 2s and -epoch-every 1s"
ls -a "$D" | grep -q '^\.expire-' && fail "(3) removal leftovers: $(ls -a "$D")"
echo "ok (3) -keep 2s: $n epochs left, $FIRST removed"

# --- (4) retention by size: -keep 1K keeps only the epoch being written (and says so), until
# the log says one was removed for size (at most 30 s)
D=$T/db4
to 120 "$BIN/dcpid" -db "$D" -event cpu-clock -flush 1 -epoch-every 1s -keep 1K -- \
    sh -c "for i in \$(seq 450); do grep -qs 'over the -keep size' '$D'/dcpid-*.log && break; $WORK_BURST; done" \
    2>"$T/err4" || fail "(4) dcpid: $(cat "$T/err4")"
n=$(epochs "$D" | wc -l)
[ "$n" = 1 ] || fail "(4) $n epochs left with -keep 1K, expected only the last one"
grep -q "over the -keep size" "$D"/dcpid-*.log || fail "(4) no removal for size in the log"
echo "ok (4) -keep 1K: one epoch left"

# --- (5) bad values
for v in "-epoch-every 0" "-epoch-every 5x" "-keep 10" "-keep 3q"; do
    out=$("$BIN/dcpid" -db "$T/db5" $v -- true 2>&1) && fail "(5) dcpid $v accepted"
    echo "$out" | grep -q "^dcpid: -" || fail "(5) dcpid $v: $out"
done
[ -e "$T/db5" ] && fail "(5) a bad flag created the database"
exit $((fails > 0))

#!/bin/bash
# daemon_basic.sh - dcpid end to end: profile a command, a system-wide daemon driven by dcpictl
# (status, flush, epoch, quit), the platform lock, SIGTERM of a -nodaemon daemon, exec failure,
# and a daemon started again right after dcpictl quit (quit waits for the lock's release).
# Skips (77) when perf_event_open of cpu-clock is not possible here.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
DEMO=$BIN/samples/work-demo
T=$(mktemp -d /tmp/dcpi-e2e-daemon.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -n "${DPID:-}" ] && kill -9 "$DPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for f in dcpid dcpictl dcpicat samples/work-demo; do
    [ -x "$BIN/$f" ] || fail "$BIN/$f not built"
done

# --- probe: can this machine sample cpu-clock at all?
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ]; then
    echo "SKIP: system-wide sampling needs root or CAP_PERFMON (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid))"
    exit 77
fi

# total samples of one profile: dcpicat's "event TOTAL name:..." line
prof_total() {
    "$BIN/dcpicat" "$1" | awk '$1 == "event" { print $2; exit }'
}
only_epoch() { ls "$1" | grep -E '^[0-9]{12}([0-9]{2})?$'; }
demo_prof() { ls "$1"/*/work-demo_*/cpu-clock.prof 2>/dev/null | head -1; }

# --- (1) dcpid -- command
# (800 ms of work-demo's CPU time: ~800 samples at 1000 Hz, whatever the load)
to 60 "$BIN/dcpid" -db "$T/db1" -event cpu-clock -- "$DEMO" 800 >/dev/null 2>"$T/err1" ||
    fail "(1) dcpid -- work-demo exited $?: $(cat "$T/err1")"
E=$(only_epoch "$T/db1")
[ "$(echo "$E" | wc -l)" = 1 ] || fail "(1) expected one epoch, got: $E"
P=$(demo_prof "$T/db1/$E")
[ -n "$P" ] || fail "(1) no work-demo_*/cpu-clock.prof in $T/db1/$E: $(find "$T/db1")"
N=$(prof_total "$P")
[ "${N:-0}" -gt 500 ] || fail "(1) work-demo profile has $N samples, expected > 500"
echo "ok (1) command: $N samples in $P"

# --- (2) system-wide daemon and dcpictl
D=$T/db2
to 30 "$BIN/dcpid" -db "$D" -event cpu-clock || fail "(2) dcpid did not start"
ST=$(to 70 "$BIN/dcpictl" -db "$D" status) || fail "(2) status failed"
echo "$ST" | grep -q "^event cpu-clock " || fail "(2) status has no 'event cpu-clock': $ST"
DPID=$(echo "$ST" | awk '$1 == "pid" { print $2 }')
[ -n "$DPID" ] || fail "(2) status has no pid line"
SOCK=$(ls "$D"/dcpid-*.sock) || fail "(2) no socket in $D"
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "(2) socket mode $(stat -c %a "$SOCK")"

# --- (3) the lock, while the daemon runs
LOCKMSG=$(to 30 "$BIN/dcpid" -db "$D" -nodaemon 2>&1)
rc=$?
[ $rc = 1 ] || fail "(3) second dcpid exited $rc"
echo "$LOCKMSG" | grep -q "locked by dcpid pid $DPID" || fail "(3) lock message: $LOCKMSG"
echo "ok (3) lock: $LOCKMSG"

to 30 "$DEMO" 300 >/dev/null 2>&1
OUT=$(to 70 "$BIN/dcpictl" -db "$D" flush) || fail "(2) flush failed: $OUT"
E1=$(only_epoch "$D")
echo "$OUT" | grep -q "^flushed [0-9]* profiles, [0-9]* samples to $E1\$" || fail "(2) flush said: $OUT"
[ -n "$(demo_prof "$D/$E1")" ] || fail "(2) no work-demo profile after flush: $(find "$D/$E1")"
OUT=$(to 70 "$BIN/dcpictl" -db "$D" epoch) || fail "(2) epoch failed: $OUT"
E2=$(only_epoch "$D" | grep -v "^$E1\$")
[ -n "$E2" ] || fail "(2) no second epoch directory"
echo "$OUT" | grep -q "^new epoch $E2\$" || fail "(2) epoch said: $OUT (dirs: $E1 $E2)"
to 30 "$DEMO" 300 >/dev/null 2>&1
OUT=$(to 70 "$BIN/dcpictl" -db "$D" quit) || fail "(2) quit failed: $OUT"
for i in $(seq 50); do
    st=$(awk '/^State:/ { print $2 }' /proc/"$DPID"/status 2>/dev/null)
    [ -z "$st" ] || [ "$st" = Z ] && break
    sleep 0.1
done
[ -z "$st" ] || [ "$st" = Z ] || fail "(2) dcpid $DPID still running after quit"
DPID=
[ ! -e "$SOCK" ] || fail "(2) socket $SOCK not removed"
P2=$(demo_prof "$D/$E2")
[ -n "$P2" ] || fail "(2) second epoch has no work-demo profile: $(find "$D/$E2")"
TO=$(to 70 "$BIN/dcpictl" -db "$D" status 2>&1)
[ $? = 1 ] && echo "$TO" | grep -q "^dcpictl: no dcpid for platform" || fail "(2) dcpictl without daemon: $TO"
# the symbol cache is gzip (zcat reads it); identical kernel symbol snapshots are one file, each
# epoch's kallsyms.gz a hard link into DB/.symcache; they differ only when a module was loaded or
# removed between the epochs
K1=$(find "$D/$E1" -name kallsyms.gz | head -1) K2=$(find "$D/$E2" -name kallsyms.gz | head -1)
[ -z "$(find "$D" -name kallsyms)" ] || fail "(2) an uncompressed kallsyms: $(find "$D" -name kallsyms)"
for f in $K1 $K2 "$D"/.symcache/*; do
    [ -e "$f" ] || continue
    case $f in *.gz) gzip -t "$f" 2>"$T/gzt" || fail "(2) $f: gzip -t: $(cat "$T/gzt")" ;;
    *) fail "(2) $f: not compressed" ;; esac
done
if [ -n "$K1" ] && [ -n "$K2" ] && cmp -s "$K1" "$K2"; then
    [ "$(stat -c %i "$K1")" = "$(stat -c %i "$K2")" ] ||
        fail "(2) identical kallsyms snapshots are two files ($(du -ch "$K1" "$K2" | tail -1))"
fi
if [ -n "$K1" ]; then
    zcat "$K1" | head -1 | grep -Eq '^[0-9a-f]+ [tTwW] [^ ]' || fail "(2) $K1: not kallsyms: $(zcat "$K1" | head -1)"
    # an epoch of a database written before the cache was compressed (kallsyms, plain) names
    # the same kernel functions
    "$BIN/dcpiprof" -db "$D" -epoch "$E1" >"$T/kgz" 2>&1 || fail "(2) dcpiprof: $(cat "$T/kgz")"
    awk '$NF == "[kernel.kallsyms]" && $(NF - 1) != "unknown_rou" {k = 1} END {exit !k}' "$T/kgz" ||
        fail "(2) no kernel function named: $(head -20 "$T/kgz")"
    zcat "$K1" >"${K1%.gz}" && rm "$K1"
    "$BIN/dcpiprof" -db "$D" -epoch "$E1" >"$T/kplain" 2>&1 || fail "(2) dcpiprof: $(cat "$T/kplain")"
    cmp -s "$T/kgz" "$T/kplain" || fail "(2) kallsyms vs kallsyms.gz: $(diff "$T/kgz" "$T/kplain" | head)"
fi
echo "ok (2) daemon: epochs $E1 $E2, $(prof_total "$P2") samples in the second"

# --- (4) SIGTERM to a -nodaemon system-wide dcpid
D4=$T/db4
"$BIN/dcpid" -db "$D4" -event cpu-clock -nodaemon 2>"$T/err4" &
P4=$!
PIDS+=($P4)
for i in $(seq 100); do ls "$D4"/dcpid-*.sock >/dev/null 2>&1 && break; sleep 0.1; done
to 30 "$DEMO" 200 >/dev/null 2>&1
kill -TERM $P4
for i in $(seq 300); do kill -0 $P4 2>/dev/null || break; sleep 0.1; done # (at most 30 s)
wait $P4
rc=$?
[ $rc = 0 ] || fail "(4) SIGTERM: dcpid exited $rc: $(cat "$T/err4")"
NP=$(find "$D4" -name '*.prof' | wc -l)
[ "$NP" -gt 0 ] || fail "(4) no profiles after SIGTERM"
echo "ok (4) SIGTERM: $NP profiles"

# --- (5) exec failure
OUT=$(to 30 "$BIN/dcpid" -db "$T/db5" -event cpu-clock -- /nonexistent 2>&1)
rc=$?
[ $rc = 127 ] || fail "(5) exit $rc, expected 127"
[ "$OUT" = "dcpid: /nonexistent: No such file or directory" ] || fail "(5) message: $OUT"
[ -z "$(find "$T/db5" -name '*.prof')" ] || fail "(5) profiles written"
echo "ok (5) exec failure"

# --- (6) dcpictl quit returns once the database is released: a new daemon starts at once
# (4 times; twice in quick mode, make test's ASan pass, where each start of a sanitized system-wide
# dcpid costs 0.6 CPU-s and memory errors show on the first cycle as on the fourth)
cycles=3
[ "${DCPI_TEST_QUICK:-0}" = 1 ] && cycles=1
for i in $(seq $cycles); do
    to 30 "$BIN/dcpid" -db "$T/db6" -event cpu-clock >"$T/err6" 2>&1 || fail "(6) start $i: $(cat "$T/err6")"
    to 90 "$BIN/dcpictl" -db "$T/db6" quit >/dev/null 2>"$T/err6q" || fail "(6) quit $i: $(cat "$T/err6q")"
done
to 30 "$BIN/dcpid" -db "$T/db6" -event cpu-clock >"$T/err6" 2>&1 || fail "(6) restart after quit: $(cat "$T/err6")"
to 90 "$BIN/dcpictl" -db "$T/db6" quit >/dev/null 2>&1 || fail "(6) last quit"
echo "ok (6) quit, then start again at once, $((cycles + 1)) times"
exit 0

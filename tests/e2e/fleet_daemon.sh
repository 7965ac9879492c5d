#!/bin/bash
# fleet_daemon.sh - dcpid -push URL: every flush reaches the fleet store (the fleet's view of the
# host equals the local dcpiprof); with the server down dcpid samples and exits as usual, its
# batches wait in the spool (dcpictl status shows them queued and the failures); dcpid runs
# killed (SIGKILL) at random points while they send the spool lose nothing and count nothing
# twice once the server and a dcpid are back.
# Skips (77) when perf_event_open of cpu-clock is not possible here.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
e2e_counting fleet-daemon
to() { timeout -k 5 "$@"; }
trap 'fleet_stop "$T/ch"; [ -n "${KEEP:-}" ] || { fleet_rm "$T/ch"; rm -rf "$T"; }' EXIT
FLEET_TMPFS=1
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
mkdir -p "$T/ch"
fleet_start "$T/ch"
U="${FLEET_HTTP}?database=fl"
"$BIN/dcpictl" -fleet "$U" init >/dev/null || { echo "FAIL: init"; exit 1; }
host=$(hostname)
local_total() { "$BIN/dcpiprof" -db "$1" -epoch "$2" | awk '$1 == "cpu-clock" { print $2; exit }'; }
# the rows that count (core/fleet/schema.c): each slot's newest commit, a dcpipush of an epoch
# superseding what dcpid -push shipped of it
committed="cid IN (SELECT argMax(cid, pushed) FROM fl.manifest WHERE kind NOT IN ('flush', 'values') OR (host, epoch) NOT IN (SELECT host, epoch FROM fl.manifest WHERE kind = 'epoch') GROUP BY slot)"
fleet_total() { fleet_sql "$FLEET_HTTP" "SELECT sum(cnt) FROM fl.samples WHERE $committed $1"; }

# the workloads: work-demo for 0.2 s of CPU, then (PAUSE) 1.2 s asleep or (WAIT) asleep until the
# file $T/go exists (at most 30 s), then work-demo again for 0.2 s of CPU: samples in two flushes
# of -flush 1 at a fraction of the CPU of work-demo's 2 s
PAUSE=(sh -c '"$0" 200 && sleep 1.2 && "$0" 200' "$BIN/samples/work-demo")
WAIT=(sh -c '"$0" 200 && n=0 && while [ ! -e "$1" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done && "$0" 200'
    "$BIN/samples/work-demo" "$T/go")
# DCPID status: its "samples N" (of the first event) while it runs
samples() { "$BIN/dcpictl" -db "$1" status 2>/dev/null | awk '$1 == "event" && $5 == "samples" { print $6; exit }'; }

# --- every flush pushed: the fleet's view of this host is the local view; -g chains, value
# hotlists and their missing-value marks (vp-classic at the smallest budget: marks where the bp
# backend runs) at exit
to 60 "$BIN/dcpid" -db "$T/db1" -e cpu-clock -g -flush 1 -vtrace vp-classic -vbudget 0.01 -push "$U" -- "${PAUSE[@]}" \
    >"$T/d1.out" 2>&1 || fail "dcpid -push: $(tail -2 "$T/d1.out")"
"$BIN/dcpiprof" -db "$T/db1" -i >"$T/l1"
"$BIN/dcpiprof" -fleet "$U" -host "$host" -i >"$T/f1" 2>&1
diff "$T/l1" "$T/f1" >"$T/d1" || fail "fleet view != local view: $(head -5 "$T/d1")"
"$BIN/dcpilist" -db "$T/db1" -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/l1m"
"$BIN/dcpilist" -fleet "$U" -host "$host" -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/f1m"
grep -Eq "value profiling: .*(inproc|bp) backend" "$T"/db1/dcpid-*.log && ! grep -q ' missing: ' "$T/l1m" &&
    fail "-vbudget 0.01 marked no instruction of hot_mul missing: $(cat "$T/l1m")"
diff "$T/l1m" "$T/f1m" >"$T/d1m" || fail "dcpid -push's value profile (missing marks) != local: $(head -5 "$T/d1m")"
n=$(fleet_sql "$FLEET_HTTP" "SELECT count() FROM fl.manifest WHERE kind = 'flush'")
[ "$n" -ge 2 ] || fail "only $n flushes pushed with -flush 1 over at least 1.6 s"
[ -z "$(ls "$T/db1/fleet-spool-"*/*.batch 2>/dev/null)" ] || fail "spool not empty after a run with the server up"
# its call chains went at exit: the same as dcpipush of its database ships
"$BIN/dcpipush" -q -db "$T/db1" -host again "$U" >/dev/null 2>&1 || fail "dcpipush of db1"
chains() {
    fleet_sql "$FLEET_HTTP" "SELECT count(), sum(cnt) FROM fl.chains WHERE host = '$1' AND $committed" | tr '\t' ' '
}
c1=$(chains "$host")
c2=$(chains again)
case "$c1" in "0 "*) fail "dcpid -g -push shipped no call chains" ;; esac
[ "$c1" = "$c2" ] || fail "chains from dcpid ($c1) != from dcpipush ($c2)"
# the same epoch also shipped by dcpipush as the same host: it replaces what dcpid shipped of
# it (counted once), and a repeat of either is a no-op
"$BIN/dcpipush" -q -db "$T/db1" "$U" >/dev/null 2>&1 || fail "dcpipush of db1 as $host"
"$BIN/dcpiprof" -fleet "$U" -host "$host" -i >"$T/f1b" 2>&1
diff "$T/l1" "$T/f1b" >"$T/d1b" || fail "dcpid -push and dcpipush of one epoch: $(head -5 "$T/d1b")"
[ "$(chains "$host")" = "$c1" ] || fail "chains of dcpid -push and dcpipush: $(chains "$host"), want $c1"

# --- -duty 0.5: the epoch records it, the fleet counts the host's samples twice. Its sampling
# window (half of a 10 s cycle) starts anywhere in the first 5 s: a light workload (work-demo for
# 20 ms of CPU every 220 ms) runs until dcpid has taken 50 samples (at most 40 s)
to 120 "$BIN/dcpid" -db "$T/dbd" -e cpu-clock -flush 1 -duty 0.5 -push "$U" -- sh -c \
    'n=0; while [ ! -e "$1" ] && [ $n -lt 300 ]; do "$0" 20; sleep 0.2; n=$((n + 1)); done' \
    "$BIN/samples/work-demo" "$T/dstop" >"$T/dd.out" 2>&1 &
dp=$!
for _ in $(seq 1 160); do
    sleep 0.25
    [ "$(samples "$T/dbd")" -ge 50 ] 2>/dev/null && break
done
touch "$T/dstop"
wait $dp || fail "dcpid -duty: $(tail -2 "$T/dd.out")"
ed=$(ls "$T/dbd" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
[ "$(cat "$T/dbd/$ed/"*/duty 2>/dev/null)" = 0.5 ] || fail "no duty 0.5 recorded in $ed"
ld=$(local_total "$T/dbd" "$ed")
[ "${ld:-0}" -ge 50 ] || fail "-duty 0.5: only '$ld' samples in $ed"
fd=$(fleet_sql "$FLEET_HTTP" "SELECT toUInt64(round(sum(cnt / duty))) FROM fl.samples WHERE epoch = '$ed' AND $committed")
[ "$fd" = "$((2 * ld))" ] || fail "-duty 0.5: the fleet shows $fd samples of $ed, want 2 x $ld"

# --- the server down: dcpid runs as usual, the batches wait in the spool
fleet_stop "$T/ch"
to 60 "$BIN/dcpid" -db "$T/db2" -e cpu-clock -flush 1 -push "$U" -- "${WAIT[@]}" >"$T/d2.out" 2>&1 &
dp=$!
st=""
for _ in $(seq 1 80); do
    sleep 0.25
    st=$("$BIN/dcpictl" -db "$T/db2" status 2>/dev/null | grep '^push ') || continue
    case "$st" in *"queued 0 "*) ;; *failures\ 0*) ;; *) break ;; esac
done
touch "$T/go"
case "$st" in *"push $U queued "[1-9]*) ;; *) fail "status while the store is down: '$st'" ;; esac
case "$st" in *"failures "[1-9]*"last error: "*) ;; *) fail "status shows no failure: '$st'" ;; esac
wait $dp || fail "dcpid with the store down: $(tail -2 "$T/d2.out")"
e2=$(ls "$T/db2" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
want=$(local_total "$T/db2" "$e2")
[ "${want:-0}" -ge 100 ] || fail "only '$want' samples with the store down"
queued=$(ls "$T/db2/fleet-spool-"*/*.batch 2>/dev/null | wc -l)
[ "$queued" -ge 2 ] || fail "only $queued batches spooled"

# a flush's write-ahead copy (.prep) that a dcpid killed inside the flush left is sent by the
# next dcpid -push on the database: one spooled batch made into one
f=$(ls "$T/db2/fleet-spool-"*/*.batch | head -1)
mv "$f" "${f%.batch}.prep"

# --- back up; dcpid runs that drain the spool are killed at random points (even ones while
# they sample and flush every second themselves), then one finishes
fleet_restart "$T/ch"
for i in 1 2 3 4 5 6; do
    w=(sleep 2)
    [ $((i % 2)) = 0 ] && w=("$BIN/samples/work-demo")
    # in a process group of its own: its workload is killed with it (not left running on)
    setsid "$BIN/dcpid" -db "$T/db2" -e cpu-clock -flush 1 -push "$U" -- "${w[@]}" >/dev/null 2>&1 &
    p=$!
    sleep "$((i % 2 == 0 ? RANDOM % 2 : 0)).$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 -- -$p 2>/dev/null || kill -9 $p 2>/dev/null
    wait $p 2>/dev/null
    # the group's other processes (the command, before its exec sharing dcpid's lock file) die
    # a moment later; one still there after 5 s is a failure of its own, named
    for _ in $(seq 1 500); do
        pgrep -g $p >/dev/null || break
        sleep 0.01
    done
    left=$(pgrep -a -g $p) && fail "kill $i: left running in dcpid's process group: $left"
    rm -f "$T/db2/dcpid-"*.sock
done
to 60 "$BIN/dcpid" -db "$T/db2" -e cpu-clock -push "$U" -- true >"$T/d3.out" 2>&1 ||
    fail "draining dcpid: $(tail -2 "$T/d3.out") (dcpid processes: $(ps -o pid=,pgid=,stat=,comm= -C dcpid | tr -s ' \n' ' ;'))"
left=$(ls "$T/db2/fleet-spool-"*/*.batch 2>/dev/null | wc -l)
[ "$left" = 0 ] || fail "$left batches left in the spool"
got=$(fleet_total "AND epoch = '$e2'")
[ "$got" = "$want" ] || fail "after kills: the fleet has $got samples of epoch $e2, the host $want"
# the killed runs' own epochs: every sample their database holds is in the fleet (a run killed
# inside a flush may have shipped samples it never wrote to its files: never fewer)
for e in $(ls "$T/db2" | grep -E '^[0-9]{12}([0-9]{2})?$'); do
    [ "$e" = "$e2" ] && continue
    l=$(local_total "$T/db2" "$e")
    g=$(fleet_total "AND epoch = '$e' AND host = '$host'")
    [ "${g:-0}" -ge "${l:-0}" ] || fail "killed run's epoch $e: the fleet has $g samples, its files $l"
done

[ $fails = 0 ] && echo "PASS: fleet daemon ($want samples through the spool)"
exit $((fails > 0))

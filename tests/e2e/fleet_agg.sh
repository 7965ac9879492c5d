#!/bin/bash
# fleet_agg.sh - the fleet's aggregate (core/fleet/agg.h) against the raw rows: every view that
# reads it (dcpiprof by procedure, by image, -procs, -comm, -pid, -since/-until windows that cut
# its 10-minute buckets, dcpilist of one image) equals the same view with DCPI_FLEET_RAW=1 (the raw GROUP BY)
# byte for byte, on a store of bench/fleetgen's synthetic hosts over three days (odd hosts at duty
# 0.25, epochs 7 minutes off the hour), after each of: the first build; re-pushed slots, an
# "epoch" push superseding built "flush" commits, a new host and a new day since the build (the
# raw corrections); the next builds and their clean-up; expiry of the oldest day (after the
# clean-up, the expiry and a dropped build: the procedures, processes and a window only); a store
# without the aggregate's tables (an older init: raw, status says so) and its init. A row
# slipped into the aggregate changes the views (they read it: the comparison can fail).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
e2e_counting fleet-agg
trap 'fleet_stop "$T/ch"; [ -n "${KEEP:-}" ] || { fleet_rm "$T/ch"; rm -rf "$T"; }' EXIT
FLEET_TMPFS=1
[ -x "$BIN/bench/fleetgen" ] || { echo "FAIL: $BIN/bench/fleetgen is not built"; exit 1; }
mkdir -p "$T/ch"
fleet_start "$T/ch"
S=$FLEET_HTTP
U="${S}?database=ag"
q() { fleet_sql "$S" "$1"; }
"$BIN/dcpictl" -fleet "$U" -fleet-keep 3 init >"$T/init.out" 2>&1 || fail "init: $(cat "$T/init.out")"

today=$(($(date +%s) / 86400 * 86400))
A=$((today - 5 * 86400 + 420)) B=$((today - 86400 + 420)) C=$((today + 420))
gen() { # START FIRST HOSTS [VAR=VALUE...]: fleetgen's hosts FIRST.. with 12 epochs of 20 rows
    local start=$1 first=$2 n=$3
    shift 3
    raw_changed
    env FLEETGEN_START="$start" FLEETGEN_DUTY=0.25 "$@" "$BIN/bench/fleetgen" "$U" "$first" "$n" 12 20 - \
        >"$T/gen.out" 2>&1 || fail "fleetgen $start $first $n $*: $(cat "$T/gen.out")"
}

# the views, each with the aggregate and raw; "check WHAT" compares them all
ALL="proc img procs comm pid win winprocs until list"
views() { # PREFIX VIEWS: one file per view
    local p=$1 w1=$((B + 40 * 60)) w2=$((B + 100 * 60)) v
    for v in $2; do
        case $v in
        proc) "$BIN/dcpiprof" -fleet "$U" -json ;;
        img) "$BIN/dcpiprof" -fleet "$U" -i -json ;;
        procs) "$BIN/dcpiprof" -fleet "$U" -procs -json ;;
        comm) "$BIN/dcpiprof" -fleet "$U" -comm web -json ;;
        pid) "$BIN/dcpiprof" -fleet "$U" -pid 1007 -i -json ;;
        win) "$BIN/dcpiprof" -fleet "$U" -since "@$w1" -until "@$w2" -json ;;
        winprocs) "$BIN/dcpiprof" -fleet "$U" -since "@$w1" -procs -json ;;
        until) "$BIN/dcpiprof" -fleet "$U" -until "@$w2" -i -json ;;
        list) "$BIN/dcpilist" -fleet "$U" "$hot" "$hotimg" ;;
        esac >"$p.$v" 2>&1
    done
}
# The raw views are the reference: they read the raw tables only (DCPI_FLEET_RAW=1: no plan of
# the aggregate's), so each is made once per state of those tables (RAWGEN, raised by whatever
# writes them: fleetgen's pushes, expiry, dropped partitions) and kept for the checks after the
# aggregate's builds, clean-up and dropped tables, which leave them as they were.
RAWGEN=0
raw_changed() { RAWGEN=$((RAWGEN + 1)); }
# check WHAT [VIEWS]: every view (default), or after the store's maintenance (clean-up, expiry,
# a dropped build) the ones each change could show in: the procedures, the split by process,
# a window of day B
check() {
    local v vs=${2:-$ALL} missing=
    views "$T/agg" "$vs"
    for v in $vs; do [ -f "$T/rawgen$RAWGEN.$v" ] || missing="$missing $v"; done
    [ -z "$missing" ] || DCPI_FLEET_RAW=1 views "$T/rawgen$RAWGEN" "$missing"
    for v in $vs; do cp "$T/rawgen$RAWGEN.$v" "$T/raw.$v"; done
    for v in $vs; do
        cmp -s "$T/agg.$v" "$T/raw.$v" ||
            fail "$1: $v differs from the raw rows: $(diff "$T/raw.$v" "$T/agg.$v" | head -4)"
    done
    for v in $nonempty; do
        case " $vs " in *" $v "*) ;; *) continue ;; esac
        grep -q '"total":[1-9]' "$T/agg.$v" || fail "$1: $v has no samples: $(head -c 300 "$T/agg.$v")"
    done
    case " $vs " in *" list "*) grep -q '^ *[0-9]' "$T/agg.list" || fail "$1: no listing: $(head -3 "$T/agg.list")" ;; esac
}
FEW="proc procs win"
status() { "$BIN/dcpictl" -fleet "$U" status 2>&1 | grep '^aggregate'; }
nonempty="proc win winprocs until comm pid" # the views with samples (the windows are in day B)

# --- day A (to expire), day B (its first two hosts also as dcpid -push flushes), day-B flushes
# of hosts 6 and 7 that an epoch push supersedes after the build
gen $A 0 6
gen $B 0 3 FLEETGEN_PERIOD=500000 FLEETGEN_PREFIX=/a # all re-pushed after the build: the least
gen $B 3 3                                           # period and paths only in superseded rows
gen $B 6 2 FLEETGEN_KIND=flush FLEETGEN_SEED=5
# the hottest procedure and its image, for dcpilist
DCPI_FLEET_RAW=1 "$BIN/dcpiprof" -fleet "$U" >"$T/top" 2>&1
hot=$(awk '/^ *[0-9]/ && NF >= 5 { print $4; exit }' "$T/top")
hotimg=$(awk '/^ *[0-9]/ && NF >= 5 { print $5; exit }' "$T/top")
hotimg=${hotimg#/a} # the file (day B's first paths are /a/...: superseded later)
[ -n "$hot" ] && [ -n "$hotimg" ] || fail "no hottest procedure: $(head -5 "$T/top")"
status | grep -q "aggregate: 0 days built" || fail "before a build: $(status)"
"$BIN/dcpictl" -fleet "$U" aggregate >"$T/a1" 2>&1 || fail "aggregate: $(cat "$T/a1")"
[ "$(grep -c ' built$' "$T/a1")" = 2 ] || fail "first build: $(cat "$T/a1")"
status | grep -q "aggregate: 2 days built, 0 commits changed since$" || fail "built: $(status)"
check "built"
grep -q '"image":"/a/' "$T/agg.proc" && grep -q '"period":500000' "$T/agg.proc" ||
    fail "built: day B's first hosts' paths and period not shown: $(head -c 300 "$T/agg.proc")"

# --- since the build: hosts 0-2 of day B re-pushed (other rows, same slots), hosts 6-7's epochs
# pushed as dcpipush does (their built flushes stop counting), a new host, a new day
gen $B 0 3 FLEETGEN_SEED=1
gen $B 6 2 FLEETGEN_SEED=9
gen $B 8 1
gen $C 0 2
status | grep -q "aggregate: 2 days built, 132 commits changed since, days not built" ||
    fail "changes: $(status)" # 36 re-pushed out, 36 in, 24 flushes out, 24 epochs in, 12 new
check "after re-pushes"
grep -q '"image":"/a/' "$T/agg.proc" || grep -q '"period":500000' "$T/agg.proc" &&
    fail "after re-pushes: the superseded rows' path or period shown: $(head -c 300 "$T/agg.proc")"

# --- a row slipped into the current build of day B changes what the views say, and its
# negative takes it out again (SummingMergeTree: the same key summed to nothing)
bab=$(q "SELECT argMax(ab, built) FROM ag.agg_days WHERE day = toDate($B)")
slip() { # SIGN
    q "INSERT INTO ag.agg_samples SELECT day, ab, hs, he, event, period, build_id, path, kind, tstart, tsize, off, $1, $1 * 1000, $1 * 1000 FROM ag.agg_samples WHERE day = toDate($B) AND ab = $bab LIMIT 1" >/dev/null
}
slip 1
"$BIN/dcpiprof" -fleet "$U" -i -json >"$T/slipped" 2>&1
DCPI_FLEET_RAW=1 "$BIN/dcpiprof" -fleet "$U" -i -json >"$T/slipraw" 2>&1
cmp -s "$T/slipped" "$T/slipraw" && fail "a row slipped into the aggregate changed nothing: not read?"
slip -1
check "slipped row taken out" "$FEW"

# --- the next builds: day B rebuilt and day C built; the next run deletes the superseded build
"$BIN/dcpictl" -fleet "$U" aggregate >"$T/a2" 2>&1 || fail "aggregate 2: $(cat "$T/a2")"
[ "$(grep -c ' built$' "$T/a2")" = 2 ] || fail "second build (days B, C): $(cat "$T/a2")"
check "rebuilt"
"$BIN/dcpictl" -fleet "$U" aggregate >"$T/a3" 2>&1 || fail "aggregate 3: $(cat "$T/a3")"
grep -q "every day up to date" "$T/a3" || fail "third run: $(cat "$T/a3")"
status | grep -q "aggregate: 3 days built, 0 commits changed since$" || fail "rebuilt: $(status)"
for i in $(seq 1 100); do # the clean-up's mutations run in the server's background
    n=$(q "SELECT uniqExact(day, ab) FROM ag.agg_samples")
    [ "$n" = 3 ] && break
    sleep 0.1
done
[ "$n" = 3 ] || fail "superseded builds left: $n (day, build) pairs in agg_samples, want 3"
check "cleaned up" "$FEW"

# --- expiry drops day A from the raw tables and the aggregate's alike
"$BIN/dcpictl" -fleet "$U" expire >"$T/ex" 2>&1 || fail "expire: $(cat "$T/ex")"
raw_changed
for t in samples manifest agg_samples agg_procs agg_cids agg_days; do
    [ "$(q "SELECT count() FROM ag.$t WHERE day = toDate($A)")" = 0 ] || fail "expire left day A in $t"
done
status | grep -q "aggregate: 2 days built, 0 commits changed since$" || fail "expired: $(status)"
check "expired" "$FEW"

# --- an older dcpictl's expiry of day B: the raw tables' partitions only; the build of a day
# without commits is not read, and the next aggregate drops it
for t in samples hotlists vmiss chains loss manifest; do
    q "ALTER TABLE ag.$t DROP PARTITION '$(date -u -d "@$B" +%F)'" >/dev/null
done
raw_changed
nonempty="proc comm pid"
check "day B expired by an older dcpictl"
"$BIN/dcpictl" -fleet "$U" aggregate >"$T/a4" 2>&1 || fail "aggregate 4: $(cat "$T/a4")"
grep -q "dropped (no commits left)" "$T/a4" || fail "the build of day B not dropped: $(cat "$T/a4")"
for t in agg_samples agg_procs agg_cids agg_days; do
    [ "$(q "SELECT count() FROM ag.$t WHERE day = toDate($B)")" = 0 ] || fail "day B left in $t"
done
status | grep -q "aggregate: 1 days built, 0 commits changed since$" || fail "B dropped: $(status)"
check "day B's build dropped" "$FEW"

# --- a store an older init made (no aggregate): raw, said by status; init adds and builds it
for t in agg_samples agg_procs agg_cids agg_days; do q "DROP TABLE ag.$t" >/dev/null; done
status | grep -q "aggregate: none" || fail "without the tables: $(status)"
check "no aggregate"
"$BIN/dcpictl" -fleet "$U" init >"$T/i2" 2>&1 || fail "init again: $(cat "$T/i2")"
raw_changed # (init may touch the raw tables' schema: the reference is made again)
[ "$(grep -c ' built$' "$T/i2")" = 1 ] || fail "init's build: $(cat "$T/i2")"
check "init's build"

[ $fails = 0 ] && echo "PASS: fleet aggregate ($(q "SELECT count() FROM ag.samples") raw rows, $(q "SELECT count() FROM ag.agg_samples") aggregated)"
exit $((fails > 0))

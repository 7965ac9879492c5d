#!/bin/bash
# bench/web_fleet.sh - dcpiweb -fleet's time to first byte per view on a synthetic fleet store:
# HOSTS hosts x EPOCHS 10-minute epochs x ROWS sample rows (bench/fleetgen, as bench/fleet.sh)
# pushed by PAR pushers into a private clickhouse-server; then each view's JSON asked once (its
# time to first byte: the store's query) and 3 more times (median: the reply kept while the
# store is unchanged, web/cache.c), beside dcpiprof -fleet's wall time for the same selection
# (median of 3), and dcpiweb's resident memory and clickhouse-server's.
#   bash bench/web_fleet.sh [BUILD]   (HOSTS=1000 EPOCHS=144 ROWS=30 PAR=2 by default)
# NOAGG=1: without the pre-aggregated tables' help (DCPI_FLEET_RAW=1: the raw GROUP BY).
# REPUSH=N: after the aggregate's build, hosts 0..N-1 pushed again (other rows, the same slots:
# 2 x N x EPOCHS commits changed since the build, which the views read raw).
# STORE=DIR keeps the server's directory in DIR: the first run pushes into it (and writes
# DIR/pushed), later runs with the same DIR start the server on it again and skip the push, so a
# change of the query code is measured on the same store (DIR is left in place; rm -rf it).
set -u
B=$(cd "${1:-build}" && pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
HOSTS=${HOSTS:-1000} EPOCHS=${EPOCHS:-144} ROWS=${ROWS:-30} PAR=${PAR:-2}
. "$S/tests/e2e/lib/common.sh"
. "$S/tests/e2e/lib/fleet.sh"
T=$(mktemp -d /tmp/dcpi-bench-webfleet.XXXXXX)
CH=${STORE:-$T/ch}
WPID=
trap '[ -n "$WPID" ] && kill $WPID; fleet_stop "$CH"; rm -rf "$T"' EXIT
mkdir -p "$CH"
if [ -e "$CH/pushed" ]; then
    fleet_restart "$CH"
    FLEET_HTTP=$(sed -n 's|.*<http_port>\([0-9]*\)</http_port>.*|http://127.0.0.1:\1/|p' "$CH/config.xml")
    U="${FLEET_HTTP}?database=bench"
    echo "reused the store in $CH: $(cat "$CH/pushed")"
    # a store an older dcpi made: the aggregate's tables added
    "$B/dcpictl" -fleet "$U" status | grep -q "aggregate: none" && "$B/dcpictl" -fleet "$U" init
else
fleet_start "$CH"
U="${FLEET_HTTP}?database=bench"
"$B/dcpictl" -fleet "$U" init >/dev/null || exit 1
per=$(((HOSTS + PAR - 1) / PAR))
t0=$(date +%s.%N)
gens=()
for p in $(seq 0 $((PAR - 1))); do
    first=$((p * per)) n=$per
    [ $((first + n)) -gt "$HOSTS" ] && n=$((HOSTS - first))
    FLEETGEN_GROUP=$EPOCHS "$B/bench/fleetgen" "$U" $first $n "$EPOCHS" "$ROWS" "$T/local" >"$T/gen$p.out" 2>&1 &
    gens+=($!)
done
for g in "${gens[@]}"; do wait "$g" || { echo "fleetgen failed: $(cat "$T"/gen*.out)"; exit 1; }; done
echo "pushed $HOSTS hosts x $EPOCHS epochs x $ROWS rows in $(echo "$(date +%s.%N) - $t0" | bc) s" | tee "$CH/pushed"
fleet_sql "$FLEET_HTTP" "OPTIMIZE TABLE bench.samples FINAL" >/dev/null 2>&1
fi
# the aggregate (core/fleet/agg.h), then REPUSH hosts again; NOAGG=1 measures the raw GROUP BY
# instead (DCPI_FLEET_RAW=1, as before the aggregate)
/usr/bin/time -f "dcpictl -fleet URL aggregate: %e s" "$B/dcpictl" -fleet "$U" aggregate
if [ "${REPUSH:-0}" -gt 0 ]; then
    FLEETGEN_SEED=$(date +%s) FLEETGEN_GROUP=$EPOCHS "$B/bench/fleetgen" "$U" 0 "$REPUSH" "$EPOCHS" "$ROWS" - ||
        { echo "fleetgen (re-push) failed"; exit 1; }
fi
[ "${NOAGG:-0}" = 1 ] && export DCPI_FLEET_RAW=1
"$B/dcpictl" -fleet "$U" status

"$B/dcpiweb" -fleet "$U" -http 127.0.0.1:0 >"$T/web.log" 2>&1 &
WPID=$!
for i in $(seq 100); do grep -q 'serving' "$T/web.log" && break; sleep 0.1; done
W=$(grep -o 'at http://127\.0\.0\.1:[0-9]*' "$T/web.log" | cut -c4-)
host=$(fleet_sql "$FLEET_HTTP" "SELECT any(host) FROM bench.samples")
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
row() { # VIEW PATH TOOL-ARGS...: the first ask, then the median of 3 more (kept replies)
    local what=$1 path=$2 i ms first tool
    shift 2
    first=$(curl -s -g -o "$T/body" -w '%{time_starttransfer}\n' "$W$path" | awk '{printf "%.0f", $1 * 1000}')
    ms=$(for i in 1 2 3; do curl -s -g -o "$T/body" -w '%{time_starttransfer}\n' "$W$path"; done |
        median | awk '{printf "%.0f", $1 * 1000}')
    tool=-
    if [ $# -gt 0 ]; then
        tool=$(for i in 1 2 3; do /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; done | median)
        tool="${tool} s"
    fi
    printf '| %s | `%s` | %s | %s | %s | %s |\n' "$what" "$path" "$first" "$ms" "$(wc -c <"$T/body")" "$tool"
}
echo "| view ($HOSTS hosts x $EPOCHS epochs) | URL | TTFB ms, first | again (kept) | bytes | the tool |"
echo "| --- | --- | --- | --- | --- | --- |"
row "procedures (dcpiprof -fleet -json)" "/api/prof.json" "$B/dcpiprof" -fleet "$U" -json
row "images" "/api/prof.json?i=1" "$B/dcpiprof" -fleet "$U" -i -json
row "processes" "/api/prof.json?procs=1" "$B/dcpiprof" -fleet "$U" -procs -json
row "page document (procedures, flame, calls)" "/api/page.json"
row "one host" "/api/prof.json?hosts=$host" "$B/dcpiprof" -fleet "$U" -host "$host" -json
row "last hour" "/api/prof.json?since=1h" "$B/dcpiprof" -fleet "$U" -since 1h -json
w1=2026-11-25T06:30 w2=2026-11-25T09:30 # 3 hours of fleetgen's day, cut inside hours
row "3 hours" "/api/prof.json?since=$w1&until=$w2" "$B/dcpiprof" -fleet "$U" -since $w1 -until $w2 -json
row "one command" "/api/prof.json?comm=web" "$B/dcpiprof" -fleet "$U" -comm web -json
row "processes, one command" "/api/prof.json?procs=1&comm=web" "$B/dcpiprof" -fleet "$U" -procs -comm web -json
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "clickhouse-server: $(grep -E 'VmRSS|VmHWM' /proc/$(cat "$CH/pid")/status | tr -s ' \t' ' ' | tr '\n' ' ')"
echo "dcpiweb: $(grep -E 'VmRSS|VmHWM' /proc/$WPID/status | tr -s ' \t' ' ' | tr '\n' ' ')"

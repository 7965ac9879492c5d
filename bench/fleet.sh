#!/bin/bash
# bench/fleet.sh - the fleet store's numbers (docs/fleet.md): HOSTS synthetic hosts x EPOCHS
# 10-minute epochs x ROWS sample rows each (bench/fleetgen.c: offsets in real functions of
# system binaries) pushed by PAR concurrent pushers through core/fleet into a private
# clickhouse-server; then push rows/s, bytes on disk per row and per sample, the aggregate's build
# (dcpictl -fleet URL aggregate), the by-procedure query (dcpiprof -fleet, with the aggregate and
# with DCPI_FLEET_RAW=1) against the same samples in one local database (dcpiprof -db, one
# platform per host; the outputs must be equal), and a projection for 10,000 hosts.
#   bash bench/fleet.sh [BUILD]   (HOSTS=1000 EPOCHS=144 ROWS=30 PAR=4 by default)
set -u
B=${1:-build}
S=$(cd "$(dirname "$0")/.." && pwd)
HOSTS=${HOSTS:-1000} EPOCHS=${EPOCHS:-144} ROWS=${ROWS:-30} PAR=${PAR:-4}
. "$S/tests/e2e/lib/common.sh"
. "$S/tests/e2e/lib/fleet.sh"
T=$(mktemp -d /tmp/dcpi-bench-fleet.XXXXXX)
trap 'fleet_stop "$T/ch"; rm -rf "$T"' EXIT
mkdir -p "$T/ch"
fleet_start "$T/ch"
U="${FLEET_HTTP}?database=bench"
"$B/dcpictl" -fleet "$U" init >/dev/null || exit 1

# --- push: PAR pushers, each its share of the hosts (and its share of the local database)
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
t1=$(date +%s.%N)
rows=$(cat "$T"/gen*.out | awk '$1 == "rows" { s += $2 } END { print s }')
pushs=$(cat "$T"/gen*.out | awk '$1 == "rows" { if ($4 > m) m = $4 } END { print m }')
q() { fleet_sql "$FLEET_HTTP" "$1"; }
q "OPTIMIZE TABLE bench.samples FINAL" >/dev/null 2>&1
stored=$(q "SELECT count() FROM bench.samples")
samples=$(q "SELECT sum(cnt) FROM bench.samples")
bytes=$(q "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = 'bench' AND table = 'samples'")
allbytes=$(q "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = 'bench'")

# --- the aggregate (core/fleet/agg.h), then the by-procedure view: fleet with it and raw
# (median of 3 each) against the local database (median of 3)
/usr/bin/time -f %e -o "$T/tagg" "$B/dcpictl" -fleet "$U" aggregate >/dev/null || exit 1
med() { sort -n | sed -n 2p; }
for i in 1 2 3; do
    /usr/bin/time -f %e -o "$T/tf$i" "$B/dcpiprof" -fleet "$U" >"$T/fleet.txt" 2>&1
    DCPI_FLEET_RAW=1 /usr/bin/time -f %e -o "$T/tr$i" "$B/dcpiprof" -fleet "$U" >"$T/raw.txt" 2>&1
    /usr/bin/time -f %e -o "$T/tl$i" "$B/dcpiprof" -db "$T/local" >"$T/local.txt" 2>&1
done
tf=$(cat "$T"/tf? | med)
tr=$(cat "$T"/tr? | med)
tl=$(cat "$T"/tl? | med)
same=$(cmp -s "$T/fleet.txt" "$T/local.txt" && cmp -s "$T/raw.txt" "$T/local.txt" && echo "equal" || echo "DIFFERENT")
rss=$(ps -o rss= -p "$(cat "$T/ch/pid")")

awk -v H="$HOSTS" -v E="$EPOCHS" -v R="$ROWS" -v P="$PAR" -v rows="$rows" -v wall="$(echo "$t1 - $t0" | bc)" \
    -v stored="$stored" -v samples="$samples" -v bytes="$bytes" -v allb="$allbytes" -v tf="$tf" -v tl="$tl" \
    -v same="$same" -v rss="$rss" -v tr="$tr" -v tagg="$(cat "$T/tagg")" 'BEGIN {
    rps = rows / wall
    printf "hosts %d x epochs %d x rows %d = %d sample rows (%d samples), %d pushers\n", H, E, R, rows, samples, P
    printf "push: %.1f s wall, %.0f rows/s\n", wall, rps
    printf "disk: samples table %.1f MB: %.2f bytes/row, %.3f bytes/sample; all tables %.1f MB\n", bytes / 1e6, bytes / stored, bytes / samples, allb / 1e6
    printf "aggregate: dcpictl -fleet URL aggregate %.2f s\n", tagg
    printf "by-procedure view: dcpiprof -fleet %.2f s (raw rows, DCPI_FLEET_RAW=1: %.2f s), dcpiprof -db (same samples, one local epoch of %d platforms) %.2f s; outputs %s\n", tf, tr, H, tl, same
    printf "clickhouse-server resident: %.0f MB\n", rss / 1024
    day = 10000 * 144 * R
    printf "projection, 10,000 hosts x 144 epochs/day x %d rows: %.2e rows/day (%.0f rows/s), %.1f GB/day on disk; at %.0f rows/s per server: %.2f servers for ingest\n", R, day, day / 86400, day * bytes / stored / 1e9, rps, day / 86400 / rps
}'

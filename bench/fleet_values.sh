#!/bin/bash
# bench/fleet_values.sh - the fleet's value hotlists and call chains (docs/fleet.md, "Queries"):
# one recording of work-demo (dcpid -g -vtrace vp-classic) pushed as HOSTS hosts into a private
# clickhouse-server, then dcpilist -vprof (hotlists merged in ClickHouse), dcpiprof (its children
# column from the stored chains) and dcpireport against the same recordings in one local
# database (one platform directory per host, which the tools merge); the outputs must be equal
# (but for the epoch's name). Prints the push time and each view's time on both sides.
#   bash bench/fleet_values.sh [BUILD]   (HOSTS=50 by default)
set -u
B=${1:-build}
S=$(cd "$(dirname "$0")/.." && pwd)
HOSTS=${HOSTS:-50}
. "$S/tests/e2e/lib/common.sh"
. "$S/tests/e2e/lib/fleet.sh"
T=$(mktemp -d /tmp/dcpi-bench-fleetv.XXXXXX)
trap 'fleet_stop "$T/ch"; rm -rf "$T"' EXIT
W=$B/samples/work-demo
"$B/dcpid" -db "$T/db" -event cpu-clock -g -vtrace vp-classic -- "$W" >/dev/null 2>&1 ||
    { echo "dcpid failed"; exit 1; }
mkdir -p "$T/ch"
fleet_start "$T/ch"
U="${FLEET_HTTP}?database=bench"
"$B/dcpictl" -fleet "$U" init >/dev/null || exit 1

now() { date +%s.%N; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
t0=$(now)
for i in $(seq 1 "$HOSTS"); do "$B/dcpipush" -q -db "$T/db" -host "h$i" "$U" || exit 1; done
t1=$(now)
e=$(ls "$T/db" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
p=$(basename "$(ls -d "$T/db/$e"/*/ | head -1)")
mkdir -p "$T/local/$e"
for i in $(seq 1 "$HOSTS"); do cp -r "$T/db/$e/$p" "$T/local/$e/$p-$i"; done
cp "$T/db/$e/epoch.info" "$T/local/$e/" 2>/dev/null

run() { # NAME LOCALCMD... -- FLEETCMD...
    local name=$1 a b c
    shift
    local l=() f=()
    while [ "$1" != -- ]; do l+=("$1"); shift; done
    shift
    f=("$@")
    a=$(now)
    "${l[@]}" >"$T/$name.l" 2>&1
    b=$(now)
    "${f[@]}" >"$T/$name.f" 2>&1
    c=$(now)
    local same=equal
    diff <(grep -v -e 'epoch [0-9f]' -e '<title>' -e '"db":' -e '"epoch":' "$T/$name.l") \
        <(grep -v -e 'epoch [0-9f]' -e '<title>' -e '"db":' -e '"epoch":' "$T/$name.f") >/dev/null || same=DIFFERENT
    printf '%-28s local %6s ms   fleet %6s ms   outputs %s\n' "$name" "$(ms "$a" "$b")" "$(ms "$b" "$c")" "$same"
}
echo "hosts $HOSTS (one work-demo recording each), push $(ms "$t0" "$t1") ms in all, load $(cut -d' ' -f1 /proc/loadavg)"
echo "hotlist rows stored: $(fleet_sql "$FLEET_HTTP" "SELECT count() FROM bench.hotlists"), chain rows: $(fleet_sql "$FLEET_HTTP" "SELECT count() FROM bench.chains")"
run "dcpilist -vprof hot_mul" "$B/dcpilist" -db "$T/local" -vprof hot_mul "$W" -- \
    "$B/dcpilist" -fleet "$U" -vprof hot_mul "$W"
run "dcpiprof (children)" "$B/dcpiprof" -db "$T/local" -- "$B/dcpiprof" -fleet "$U"
run "dcpireport" "$B/dcpireport" -db "$T/local" -- "$B/dcpireport" -fleet "$U"

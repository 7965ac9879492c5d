#!/bin/bash
# dcpidiff_vs_perf.sh - dcpidiff against `perf diff` on equivalent recordings of two workloads
# whose change is known: samples/work-diff mode 1 then mode 2 (diff_f +20 points), and xz -0
# then xz -9 on the same generated file (other match finders). Each workload runs once under
# dcpid and once under perf record (same event cpu-clock, same 4 kHz). Prints, per tool, the
# wall time and peak memory of the comparison (/usr/bin/time -f '%e %M': seconds, KiB; best of
# 3) and the first row each reports (perf diff -c delta-abs sorts by the absolute difference).
#   bench/dcpidiff_vs_perf.sh BUILD_DIR
set -u
B=${1:?usage: dcpidiff_vs_perf.sh BUILD_DIR}
command -v perf >/dev/null || { echo "perf (linux-perf) is not installed"; exit 77; }
T=$(mktemp -d /tmp/dcpidiff-perf.XXXXXX)
trap 'rm -rf "$T"' EXIT
head -c 4000000 /dev/urandom | base64 >"$T/f"

record() { # NAME COMMAND...
    local n=$1
    shift
    "$B/dcpid" -db "$T/db-$n" -freq 4000 -event cpu-clock -- "$@" >/dev/null 2>&1 || exit 1
    perf record -q -e cpu-clock -F 4000 -o "$T/$n.data" -- "$@" >/dev/null 2>&1 || exit 1
}
best() { # OUT COMMAND...: best of 3 "%e %M" into OUT.time, stdout into OUT
    local out=$1 i
    shift
    for i in 1 2 3; do
        /usr/bin/time -f '%e %M' -o "$out.t$i" "$@" >"$out" 2>/dev/null
    done
    sort -n "$out".t? | head -1 >"$out.time"
}
compare() { # LABEL A B
    best "$T/dd" "$B/dcpidiff" -csl "$T/db-$2" "$T/db-$3"
    best "$T/pd" perf diff -c delta-abs --sort dso,symbol "$T/$2.data" "$T/$3.data"
    local dtop ptop
    dtop=$(awk -F, 'NR == 2 { print $9 " " $5 }' "$T/dd")
    ptop=$(grep -v '^#' "$T/pd" | awk 'NF >= 4 { print $NF " " $2; exit }')
    printf '%-10s dcpidiff  %s s %s KiB  first: %s\n' "$1" $(cat "$T/dd.time") "$dtop"
    printf '%-10s perf diff %s s %s KiB  first: %s\n' "$1" $(cat "$T/pd.time") "$ptop"
}
record w1 "$B/samples/work-diff" 1 600
record w2 "$B/samples/work-diff" 2 600
record x0 xz -0 -c "$T/f"
record x9 xz -9 -c "$T/f"
compare work-diff w1 w2
compare xz x0 x9

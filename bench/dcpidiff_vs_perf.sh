#!/bin/bash
# dcpidiff_vs_perf.sh - dcpidiff against `perf diff` on equivalent recordings of two workloads
# whose change is known: samples/work-diff mode 1 then mode 2 (diff_f +20 points), and xz -0
# then xz -9 on the same generated file (other match finders). Each workload runs once under
# dcpid and once under perf record (same event cpu-clock, same 4 kHz). Prints, per tool, the
# wall time and peak memory of the comparison (/usr/bin/time -f '%e %M': seconds, KiB; best of
# 3) and the first row each reports (perf diff -c delta-abs sorts by the absolute difference).
# With "big" (second argument), a third pair of about 1M samples each instead: work-diff 1 and 2
# for ROUNDS (default 60000) at 20 kHz, dcpid and perf record sampling the same run (dcpid --
# perf record -- work-diff), so both tools compare the same executions.
#   bench/dcpidiff_vs_perf.sh BUILD_DIR [big [ROUNDS]]
set -u
B=${1:?usage: dcpidiff_vs_perf.sh BUILD_DIR [big [ROUNDS]]}
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
if [ "${2:-}" = big ]; then
    rounds=${3:-60000}
    for m in 1 2; do
        "$B/dcpid" -db "$T/db-b$m" -freq 20000 -event cpu-clock -- perf record -q -e cpu-clock \
            -F 20000 -o "$T/b$m.data" -- "$B/samples/work-diff" $m "$rounds" >/dev/null 2>&1 || exit 1
    done
    n1=$("$B/dcpiprof" -db "$T/db-b1" -i | awk '$1 == "cpu-clock" && NF == 4 {print $2; exit}')
    p1=$(perf script -i "$T/b1.data" -F ip 2>/dev/null | wc -l)
    echo "big pair: dcpi $n1 samples, perf $p1 samples in mode 1 (same run)"
    compare work-diff-big b1 b2
    exit 0
fi
record w1 "$B/samples/work-diff" 1 600
record w2 "$B/samples/work-diff" 2 600
record x0 xz -0 -c "$T/f"
record x9 xz -9 -c "$T/f"
compare work-diff w1 w2
compare xz x0 x9

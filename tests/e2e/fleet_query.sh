#!/bin/bash
# fleet_query.sh - the fleet on two ClickHouse shards behind Distributed tables: 21 hosts'
# databases (two real recordings re-labelled; 5 in the quick ASan pass) pushed concurrently; dcpiprof -fleet equals the sum
# of every host's local dcpiprof exactly (by procedure and by image), one host's view equals its
# local one line for line (also with -comm), -procs splits by command, -since/-until select
# epochs by time, both shards hold rows, and without -fleet nothing needs a server.
# Skips (77) when perf_event_open of cpu-clock is not possible here (the databases are recorded).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
e2e_counting fleet-query
to() { timeout -k 5 "$@"; }
trap 'fleet_stop "$T/a"; fleet_stop "$T/b"; [ -n "${KEEP:-}" ] || { fleet_rm "$T/a"; fleet_rm "$T/b"; rm -rf "$T"; }' EXIT
FLEET_TMPFS=1
e2e_require gcc build-essential
e2e_require python3 python3
e2e_require go golang-go
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
# hosts h1..hNH (odd: db2, even: db1) and work-demo's CPU ms per recording. DCPI_TEST_QUICK=1
# (make test's ASan pass, there for memory errors, which the same code paths show on fewer and
# smaller pushes): 5 hosts, 0.4 s; the first pass pushes 21 hosts' databases at once
NH=21 WMS=700
[ "${DCPI_TEST_QUICK:-0}" = 1 ] && NH=5 WMS=400

# --- two recordings: the demo workload (with call chains and vp-classic's value hotlists) and a
# program with hostile names
prog=$(fleet_hostile_prog "$T") || exit 1
to 60 "$BIN/dcpid" -db "$T/db1" -event cpu-clock -g -vtrace vp-classic -- "$BIN/samples/work-demo" $WMS >/dev/null 2>&1 ||
    { echo "FAIL: dcpid work-demo ($WMS ms of CPU)"; exit 1; }
to 60 "$BIN/dcpid" -db "$T/db2" -event cpu-clock -- "$prog" 500 >/dev/null 2>&1 ||
    { echo "FAIL: dcpid hostile program"; exit 1; }
for d in db1 db2; do
    n=$("$BIN/dcpiprof" -db "$T/$d" | awk '$1 == "cpu-clock" { print $2; exit }')
    [ "${n:-0}" -ge 100 ] || { echo "FAIL: $d has only '$n' samples"; exit 1; }
done
# db2 also gets an old epoch (a copy dated 2026-01-01 10:00) for the time window
e2=$(ls "$T/db2" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
cp -r "$T/db2/$e2" "$T/db2/202601011000"

mkdir -p "$T/a" "$T/b"
fleet_start "$T/b"
B=$FLEET_HTTP
fleet_start "$T/a" "$FLEET_TCP"
A=$FLEET_HTTP
"$BIN/dcpictl" -fleet "$B?database=fl" init >/dev/null || fail "init shard b"
"$BIN/dcpictl" -fleet "$A?database=fl" -cluster two init >/dev/null || fail "init front a"
U="$A?database=fl"

# --- NH hosts pushed at once
pids=()
for i in $(seq 1 $NH); do
    db=$T/db$((i % 2 + 1))
    "$BIN/dcpipush" -q -db "$db" -host "h$i" "$U" >"$T/push$i.out" 2>&1 &
    pids+=($!)
done
echo "$(date +%T.%N) pushes started" >>"$T/times"
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "push h$((i + 1)): $(cat "$T/push$((i + 1)).out")"
done
echo "$(date +%T.%N) pushes done" >>"$T/times"
for s in "$A" "$B"; do
    [ "$(fleet_sql "$s" "SELECT count() FROM fl.samples")" -gt 0 ] || fail "shard $s holds no rows"
done

# sum of the local views, one "key count" line per row (key: the columns after the counts and,
# where the view has them, the children columns)
rows_of() { awk -F, 'NR == 1 { skip = $4 == "children" ? 5 : 3; next }
    { k = $0; for (i = 0; i < skip; i++) sub(/^[^,]*,/, "", k); print $1 "," k }'; }
sum_local() { # VIEWFLAGS...: hosts h1..hNH are db2 (odd) and db1 (even): each view once, weighted
    { "$BIN/dcpiprof" -db "$T/db2" -csl "$@" | rows_of | sed "s/^/$(((NH + 1) / 2)),/"
        "$BIN/dcpiprof" -db "$T/db1" -csl "$@" | rows_of | sed "s/^/$((NH / 2)),/"; } |
        awk -F, '{ k = $0; sub(/^[^,]*,[^,]*,/, "", k); s[k] += $1 * $2 } END { for (k in s) if (s[k]) print k " " s[k] }' | sort
}
fleet_rows() {
    "$BIN/dcpiprof" -fleet "$U" -since 2026-06-01 -csl "$@" | rows_of |
        awk -F, '{ k = $0; sub(/^[^,]*,/, "", k); if ($1) print k " " $1 }' | sort
}
sum_local >"$T/want.proc"
fleet_rows >"$T/got.proc" || fail "dcpiprof -fleet failed"
[ -s "$T/want.proc" ] && diff "$T/want.proc" "$T/got.proc" >"$T/d1" || fail "by procedure, fleet != sum of hosts: $(head -5 "$T/d1")"
sum_local -i >"$T/want.img"
fleet_rows -i >"$T/got.img"
diff "$T/want.img" "$T/got.img" >"$T/d2" || fail "by image, fleet != sum of hosts: $(head -5 "$T/d2")"

# --- one host: its local view, line for line (its database has one epoch)
"$BIN/dcpiprof" -db "$T/db2" -epoch "$e2" >"$T/l2" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host h1 -since 2026-06-01 >"$T/f2" 2>&1
diff "$T/l2" "$T/f2" >"$T/d3" || fail "host h1 differs from its local view: $(head -5 "$T/d3")"
"$BIN/dcpiprof" -db "$T/db1" -comm work-demo >"$T/l3" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host h2 -comm work-demo >"$T/f3" 2>&1
diff "$T/l3" "$T/f3" >"$T/d4" || fail "-comm differs: $(head -5 "$T/d4")"
grep -q "hot_mul" "$T/f3" || fail "-comm work-demo lost hot_mul"
# dcpitopcounts, dcpilist and dcpicalc read the same set (a listing's first line names the epoch)
"$BIN/dcpitopcounts" -db "$T/db1" -n 10 >"$T/l5" 2>&1
"$BIN/dcpitopcounts" -fleet "$U" -host h2 -n 10 >"$T/f5" 2>&1
diff "$T/l5" "$T/f5" >"$T/d5" || fail "dcpitopcounts -fleet differs: $(head -5 "$T/d5")"
"$BIN/dcpilist" -db "$T/db1" hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/l6"
"$BIN/dcpilist" -fleet "$U" -host h2 hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/f6"
[ -s "$T/l6" ] && diff "$T/l6" "$T/f6" >"$T/d6" || fail "dcpilist -fleet differs: $(head -5 "$T/d6")"
# dcpiexport: the same file (gperftools, gmon, llvm byte for byte; pprof as Go's pprof reads it,
# but for its comment and time)
for f in gperftools gmon pprof llvm; do
    "$BIN/dcpiexport" -db "$T/db1" -format $f -o "$T/l.$f" work-demo 2>"$T/x.err" || fail "dcpiexport $f: $(cat "$T/x.err")"
    "$BIN/dcpiexport" -fleet "$U" -host h2 -format $f -o "$T/f.$f" work-demo 2>"$T/x.err" ||
        fail "dcpiexport -fleet $f: $(cat "$T/x.err")"
done
cmp -s "$T/l.gperftools" "$T/f.gperftools" || fail "dcpiexport -fleet -format gperftools differs"
cmp -s "$T/l.gmon" "$T/f.gmon" || fail "dcpiexport -fleet -format gmon differs"
grep -q "^hot_mul:" "$T/l.llvm" && cmp -s "$T/l.llvm" "$T/f.llvm" ||
    fail "dcpiexport -fleet -format llvm differs: $(diff "$T/l.llvm" "$T/f.llvm" | head -5)"
for s in l f; do
    go tool pprof -raw "$T/$s.pprof" 2>&1 | grep -v -e '^Comments' -e 'dcpi database' -e '^Time' >"$T/$s.raw"
done
grep -q "vp-classic" "$T/l.raw" && diff "$T/l.raw" "$T/f.raw" >"$T/d6x" ||
    fail "dcpiexport -fleet -format pprof differs: $(head -5 "$T/d6x")"
"$BIN/dcpicoverage" -db "$T/db1" "$BIN/samples/work-demo" 2>&1 | grep -v '^epochs' >"$T/l6v"
"$BIN/dcpicoverage" -fleet "$U" -host h2 "$BIN/samples/work-demo" 2>&1 | grep -v '^epochs' >"$T/f6v"
grep -q "hot_mul" "$T/l6v" && diff "$T/l6v" "$T/f6v" >"$T/d6v" || fail "dcpicoverage -fleet differs: $(head -5 "$T/d6v")"
"$BIN/dcpicalc" -db "$T/db1" hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/l6c"
"$BIN/dcpicalc" -fleet "$U" -host h2 hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/f6c"
grep -q "blocks" "$T/l6c" && diff "$T/l6c" "$T/f6c" >"$T/d6c" || fail "dcpicalc -fleet differs: $(head -5 "$T/d6c")"
# dcpidiff: two host sets differ (different programs), two time windows of one host do not
"$BIN/dcpidiff" -fleet "$U" h1 h2 >"$T/df1" 2>&1 || fail "dcpidiff -fleet h1 h2: $(tail -2 "$T/df1")"
grep -q "hot_mul" "$T/df1" || fail "dcpidiff h1 h2 does not show hot_mul: $(head -8 "$T/df1")"
"$BIN/dcpidiff" -fleet "$U" "h1@..2026-01-02" "h1@2026-06-01" >"$T/df2" 2>&1 ||
    fail "dcpidiff -fleet windows: $(tail -2 "$T/df2")"
n=$(awk 'f && NF { n++ } /^ +A +A%/ { f = 1 } END { print n + 0 }' "$T/df2")
grep -q "within the noise" "$T/df2" && [ "$n" -le 1 ] ||
    fail "two windows of the same samples differ: $(head -8 "$T/df2")"
# -procs: per process as each host recorded it (one host: its local view line for line); the
# NH/2 hosts of db1 (one recording) add up per pid and command
"$BIN/dcpiprof" -db "$T/db1" -procs >"$T/l7" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host h2 -procs >"$T/f7" 2>&1
diff "$T/l7" "$T/f7" >"$T/d7" || fail "-procs of one host differs: $(head -5 "$T/d7")"
want=$("$BIN/dcpiprof" -db "$T/db1" -procs -csl | awk -F, '$NF ~ / work-demo$/ { print $1 * '$((NH / 2))' " " $NF }' | sort)
got=$("$BIN/dcpiprof" -fleet "$U" -procs -csl | awk -F, '$NF ~ / work-demo$/ { print $1 " " $NF }' | sort)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "-procs: work-demo '$got', want '$want'"
# the children column (from the stored call chains) of one host: its local view
"$BIN/dcpiprof" -db "$T/db1" >"$T/l8" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host h2 >"$T/f8" 2>&1
grep -q "children" "$T/l8" && diff "$T/l8" "$T/f8" >"$T/d8" ||
    fail "children column of one host differs: $(head -5 "$T/d8")"

# --- two recordings of work-demo as two hosts: the fleet's value hotlists (-vprof) and children
# are those of a local epoch holding both recordings (as two platforms, which dcpilist and
# dcpiprof merge as the fleet's GROUP BY must: hotlists by dcpi_vsummary_merge)
# The second recording at the smallest value budget (-vbudget 0.01: a few arms at most), so that
# vp-classic's selected instructions are marked missing (.vmiss, "no arm afforded") where the
# inproc or bp backend runs: the fleet shows one host's marks as its local listing does, and the marks of
# two hosts as a local epoch holding both (values win: a mark shows only where no host has values)
to 60 "$BIN/dcpid" -db "$T/db3" -event cpu-clock -g -vtrace vp-classic -vbudget 0.01 -- "$BIN/samples/work-demo" $WMS >/dev/null 2>&1 ||
    fail "dcpid work-demo (second recording, $WMS ms of CPU)"
"$BIN/dcpipush" -q -db "$T/db3" -host v3 "$U" >"$T/push-v3.out" 2>&1 || fail "push v3: $(cat "$T/push-v3.out")"
e1=$(ls "$T/db1" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
e3=$(ls "$T/db3" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
mkdir -p "$T/m"
cp -r "$T/db1/$e1" "$T/m/$e1"
for p in "$T/db3/$e3"/*/; do cp -r "$p" "$T/m/$e1/$(basename "$p")-v3"; done
"$BIN/dcpilist" -db "$T/db3" -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/l3m"
"$BIN/dcpilist" -fleet "$U" -host v3 -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/f3m"
if grep -Eq "value profiling: .*(inproc|bp) backend" "$T"/db3/dcpid-*.log; then # else no marks (dcpid's regs backend marks none)
    grep -q ' missing: no arm afforded (' "$T/l3m" ||
        fail "-vbudget 0.01 marked no instruction of hot_mul missing: $(cat "$T/l3m")"
else
    echo "NOTE: no breakpoint backend here (execute breakpoints unavailable): dcpid's own marks not checked, the crafted ones below are"
fi
diff "$T/l3m" "$T/f3m" >"$T/d3m" || fail "dcpilist -fleet -vtrace of host v3 (its missing marks) differs from its local listing: $(head -5 "$T/d3m")"
"$BIN/dcpilist" -db "$T/m" -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/l9"
"$BIN/dcpilist" -fleet "$U" -host h2,v3 -vtrace vp-classic hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2 >"$T/f9"
grep -q "^vp-classic: backend" "$T/l9" && diff "$T/l9" "$T/f9" >"$T/d9" ||
    fail "dcpilist -fleet -vprof of two hosts differs from their merge: $(head -5 "$T/d9")"

# crafted marks (the same on every machine): copies of db1 with a vp-classic.vmiss in
# work-demo's directory: on the instruction X that has a hotlist in db1 (values win: no mark
# shown) and on the instruction Y that has none (the jle): db4 (host k4) says "breakpoint not
# armed", db5 (host k5) "not executed while armed"; one host shows its reason as its local
# listing, two hosts (as a local epoch holding both) count the reasons, a host with values and
# no mark (h2) adds nothing, a repeated push is a no-op and a grown epoch replaces the marks
# a report page but for its title, db and epoch
norm() { tr ',' '\n' <"$1" | grep -v -e '^"db":' -e '^"epoch":' -e '<title>'; }
vm() { # DB: the work-demo image directory of DB's epoch
    ls -d "$1"/*/*/work-demo_* | head -1
}
"$BIN/dcpilist" -db "$T/db1" -vprof hot_mul "$BIN/samples/work-demo" >"$T/l1v" 2>&1
X=$(awk '$2 ~ /^0x/ && / \([0-9.]+% / { print $2; exit }' "$T/l1v")
Y=$(awk '$2 ~ /^0x/ && $3 == "jle" && !/ \(/ && !/missing:/ { print $2; exit }' "$T/l1v")
ts=$(grep -a -m1 '^tstart ' "$(vm "$T/db1")/cpu-clock.prof" | awk '{ print $2 }')
if [ -z "$X" ] || [ -z "$Y" ] || [ -z "$ts" ]; then
    fail "crafted marks: no instruction with a hotlist ('$X') or without ('$Y') in hot_mul, or no tstart ('$ts'): $(cat "$T/l1v")"
else
    xo=$(printf '0x%x' $((X - ts)))
    yo=$(printf '0x%x' $((Y - ts)))
    for k in 4 5; do
        mkdir -p "$T/db$k" && cp -r "$T/db1/$e1" "$T/db$k/$e1"
    done
    printf '%s not executed while armed (9 arms)\n%s breakpoint not armed (2 tries: debug registers busy)\n' \
        "$xo" "$yo" >"$(vm "$T/db4")/vp-classic.vmiss"
    printf '%s not executed while armed (4 arms)\n' "$yo" >"$(vm "$T/db5")/vp-classic.vmiss"
    for k in 4 5; do
        "$BIN/dcpipush" -q -db "$T/db$k" -host k$k "$U" >"$T/push-k$k.out" 2>&1 || fail "push k$k: $(cat "$T/push-k$k.out")"
    done
    mkdir -p "$T/m45" && cp -r "$T/db4/$e1" "$T/m45/$e1"
    for p in "$T/db5/$e1"/*/; do cp -r "$p" "$T/m45/$e1/$(basename "$p")-k5"; done
    vlist() { "$BIN/dcpilist" "$@" -vprof hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2; }
    line() { awk -v a="$1" '$2 == a' "$2"; }
    vlist -db "$T/db4" >"$T/l4m"
    vlist -fleet "$U" -host k4 >"$T/f4m"
    line "$Y" "$T/f4m" | grep -q ' -   -  missing: breakpoint not armed (2 tries: debug registers busy)$' ||
        fail "host k4: $Y not marked as its .vmiss says: $(line "$Y" "$T/f4m")"
    line "$X" "$T/f4m" | grep -q 'missing' && fail "host k4: a mark shown on $X, which has values: $(line "$X" "$T/f4m")"
    diff "$T/l4m" "$T/f4m" >"$T/d4m" || fail "host k4's marks differ from its local listing: $(head -5 "$T/d4m")"
    "$BIN/dcpireport" -db "$T/db4" -o "$T/r4l.html" 2>/dev/null
    "$BIN/dcpireport" -fleet "$U" -host k4 -o "$T/r4f.html" 2>/dev/null
    grep -q '\["-","-","-","missing: breakpoint not armed (2 tries: debug registers busy)",""\]' "$T/r4l.html" &&
        diff <(norm "$T/r4l.html") <(norm "$T/r4f.html") >"$T/d4r" ||
        fail "dcpireport -fleet of host k4 (its marks) differs from its local page: $(head -5 "$T/d4r")"
    vlist -db "$T/m45" >"$T/l45"
    vlist -fleet "$U" -host k4,k5 >"$T/f45"
    line "$Y" "$T/f45" | grep -q ' -   -  missing: breakpoint not armed x1, not executed while armed x1$' ||
        fail "hosts k4,k5: $Y does not count both reasons: $(line "$Y" "$T/f45")"
    diff "$T/l45" "$T/f45" >"$T/d45" || fail "hosts k4,k5's marks differ from their local merge: $(head -5 "$T/d45")"
    vlist -fleet "$U" -host h2,k4 >"$T/f24"
    line "$Y" "$T/f24" | grep -q ' -   -  missing: breakpoint not armed (2 tries: debug registers busy)$' ||
        fail "hosts h2,k4: $Y: $(line "$Y" "$T/f24")"
    out=$("$BIN/dcpipush" -db "$T/db4" -host k4 "$U" 2>&1)
    case "$out" in *"already in the store") ;; *) fail "repeated push of k4 said: $out" ;; esac
    printf '%s not executed while armed (9 arms)\n' "$xo" >"$(vm "$T/db4")/vp-classic.vmiss"
    "$BIN/dcpipush" -q -db "$T/db4" -host k4 "$U" >"$T/push-k4.out" 2>&1 || fail "re-push k4: $(cat "$T/push-k4.out")"
    vlist -fleet "$U" -host k4 >"$T/f4r"
    vlist -db "$T/db4" >"$T/l4r"
    ! grep -q 'missing:' "$T/f4r" && diff "$T/l4r" "$T/f4r" >/dev/null ||
        fail "k4 pushed again without the mark on $Y: $(grep 'missing:' "$T/f4r")"
fi
# hotlists' cluster counters (vpdb-0.02, schema 4): db6 is db1 with its value profiles written
# as vpdb-0.01 (no cluster information); host n6 alone lists as db6 does, and n6 with h2 as a
# local epoch holding both (dcpi_vsummary_merge: n6's samples count as clusters of one sample)
vp01() { # FILE: rewrite a vpdb-0.02 value profile as vpdb-0.01 (the records' counters dropped)
    python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read()
h = b.index(b"\nsamples\n") + 9
if b"version vpdb-0.02\n" not in b[:h]:
    sys.exit(0)
out, p = [b[:h].replace(b"version vpdb-0.02\n", b"version vpdb-0.01\n")], h
while p < len(b) - 24:
    nv = struct.unpack_from("<I", b, p + 4)[0]
    out += [b[p:p + 32], b[p + 64:p + 64 + 32 * nv]]
    p += 64 + 32 * nv
assert p == len(b) - 24
open(sys.argv[1], "wb").write(b"".join(out + [b[p:]]))' "$1"
}
mkdir -p "$T/db6" && cp -r "$T/db1/$e1" "$T/db6/$e1"
find "$T/db6" -name '*.vprof' | while read -r f; do vp01 "$f" || fail "vpdb-0.01 copy of $f"; done
grep -rlaq 'version vpdb-0.02' "$T/db6" && fail "db6 still has cluster counters"
grep -rlaq 'version vpdb-0.02' "$T/db1" ||
    echo "NOTE: db1's hotlists have no cluster counters (no clustered backend here): the merge with counters is not checked"
"$BIN/dcpipush" -q -db "$T/db6" -host n6 "$U" >"$T/push-n6.out" 2>&1 || fail "push n6: $(cat "$T/push-n6.out")"
mkdir -p "$T/m16" && cp -r "$T/db1/$e1" "$T/m16/$e1"
for p in "$T/db6/$e1"/*/; do cp -r "$p" "$T/m16/$e1/$(basename "$p")-n6"; done
cl() { "$BIN/dcpilist" "$@" -vprof hot_mul "$BIN/samples/work-demo" 2>&1 | tail -n +2; }
cl -db "$T/db6" >"$T/l6n"
cl -fleet "$U" -host n6 >"$T/f6n"
grep -q '+-' "$T/l6n" && diff "$T/l6n" "$T/f6n" >"$T/d6n" ||
    fail "host n6 (no cluster counters) differs from its local listing: $(head -5 "$T/d6n")"
cl -db "$T/m16" >"$T/l16"
cl -fleet "$U" -host h2,n6 >"$T/f16"
diff "$T/l16" "$T/f16" >"$T/d16" ||
    fail "hosts h2 (cluster counters) and n6 (none) differ from their local merge: $(head -5 "$T/d16")"
"$BIN/dcpiprof" -db "$T/m" >"$T/l10" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host h2,v3 >"$T/f10" 2>&1
diff "$T/l10" "$T/f10" >"$T/d10" || fail "children of two hosts differ from their merge: $(head -5 "$T/d10")"
# dcpireport -fleet: one host's page is its local page but for the title, db and epoch (flame
# graph, callers, children, listings with hotlists); two hosts' page has the merged epoch's
# tables, listings and flame totals (the frames' numbering follows the order in which chains
# were met, which the fleet cannot know for a local merge)
"$BIN/dcpireport" -db "$T/db1" -o "$T/r1.html" 2>"$T/r1.err" || fail "dcpireport: $(cat "$T/r1.err")"
"$BIN/dcpireport" -fleet "$U" -host h2 -o "$T/r2.html" 2>"$T/r2.err" || fail "dcpireport -fleet: $(cat "$T/r2.err")"
grep -q '"flame":{' "$T/r1.html" && diff <(norm "$T/r1.html") <(norm "$T/r2.html") >"$T/d11" ||
    fail "dcpireport -fleet of one host differs from its local page: $(head -5 "$T/d11")"
"$BIN/dcpireport" -db "$T/m" -o "$T/r3.html" 2>/dev/null
"$BIN/dcpireport" -fleet "$U" -host h2,v3 -o "$T/r4.html" 2>/dev/null
page() {
    python3 -c 'import json, re, sys
d = json.loads(re.search(r"<script type=\"application/json\"[^>]*>(.*?)</script>", open(sys.argv[1]).read(), re.S).group(1))
print(json.dumps([d[k] for k in ("events", "image_rows", "proc_rows", "process_rows", "listings")]))
print(d["flame"]["total"], d["flame"]["chains"], d["calls"]["total"], d["calls"]["rows"], sorted(d["calls"]["images"]))' "$1"
}
[ "$(page "$T/r3.html")" = "$(page "$T/r4.html")" ] ||
    fail "dcpireport -fleet of two hosts differs from the merged epoch's page"
out=$("$BIN/dcpireport" -fleet "$U" -diff latest 2>&1) && fail "dcpireport -fleet -diff accepted"
case "$out" in *"-diff compares two epochs of a database, not the fleet"*) ;; *) fail "-fleet -diff: $out" ;; esac
out=$("$BIN/dcpilist" -fleet "$U" -host h2 -vtrace vp-addr hot_mul "$BIN/samples/work-demo" 2>&1) &&
    fail "a value profile the fleet does not hold was listed"
case "$out" in *"no value profile 'vp-addr' of "*"(value profiles there: vp-classic)") ;; *) fail "-vtrace vp-addr: $out" ;; esac

# --- time windows: the old epoch of db2 only, then nothing
old=$("$BIN/dcpiprof" -db "$T/db2" -epoch 202601011000 | awk '$1 == "cpu-clock" { print $2; exit }')
got=$("$BIN/dcpiprof" -fleet "$U" -host h1,h3 -until 2026-01-02 | awk '$1 == "cpu-clock" { print $2; exit }')
[ "$got" = "$((old * 2))" ] || fail "-until 2026-01-02 on h1,h3: $got samples, want $((old * 2))"
out=$("$BIN/dcpiprof" -fleet "$U" -until 2000-01-01 2>&1)
case "$out" in *"no samples"*) ;; *) fail "-until 2000-01-01: $out" ;; esac
out=$("$BIN/dcpiprof" -fleet "$U" -since yesterday 2>&1) && fail "-since yesterday accepted"
case "$out" in *"-since wants a time"*) ;; *) fail "-since yesterday: $out" ;; esac
out=$("$BIN/dcpiprof" -db "$T/db1" -host h1 2>&1) && fail "-host without -fleet accepted"

# --- without -fleet no server is needed: the local view with both servers stopped (the front
# first: shard b's shutdown waits for a's open connections to it)
fleet_stop "$T/a"
fleet_stop "$T/b"
"$BIN/dcpiprof" -db "$T/db2" -epoch "$e2" >"$T/l4" 2>&1 || fail "local dcpiprof without a server"
diff "$T/l2" "$T/l4" >/dev/null || fail "local view changed"
out=$("$BIN/dcpiprof" -fleet "$U" 2>&1) && fail "-fleet with the server down succeeded"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "server down: not one line: $out"

[ $fails = 0 ] && echo "PASS: fleet query ($NH hosts, 2 shards)"
exit $((fails > 0))

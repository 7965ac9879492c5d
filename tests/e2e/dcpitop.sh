#!/bin/bash
# dcpitop.sh - the live view (issue 23 item 6) against a running daemon (dcpid -- work-demo, no
# root needed; its control socket answers like the system-wide daemon's): `dcpitop -n 2` prints
# two plain-text refreshes (not a terminal: no escape sequences) with the rate and lost lines
# and the procedure and image tables; with -comm work-demo, once a window holds >= 300 of its
# samples (run until then), hot_mul (~60% of work-demo's rounds against hot_add's ~30%) is
# first; -pid shows only that process's images; -i images only; the view flushed nothing
# (-flush 3600: no profile on disk while it ran); no daemon is a one-line error, exit 1.
# Skips (77) when perf_event_open of cpu-clock is not possible here.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
DEMO=$BIN/samples/work-demo
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting dcpitop
to() { timeout -k 5 "$@"; }
for f in dcpid dcpitop dcpictl samples/work-demo; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
D=$T/db
to 300 "$BIN/dcpid" -db "$D" -e cpu-clock -flush 3600 -- "$DEMO" 1000000 >/dev/null 2>"$T/dcpid.err" &
DP=$!
WP=
trap 'kill $DP 2>/dev/null; [ -n "$WP" ] && kill "$WP" 2>/dev/null; wait $DP 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
for i in $(seq 100); do to 10 "$BIN/dcpictl" -db "$D" status >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 50); do WP=$(pgrep -n -f "^$DEMO 1000000\$"); [ -n "$WP" ] && break; sleep 0.1; done
[ -n "$WP" ] || { echo "FAIL: work-demo not running under dcpid: $(cat "$T/dcpid.err")"; exit 1; }

# (1) dcpitop -n 2: two plain blocks
out=$(to 60 "$BIN/dcpitop" -db "$D" -n 2 -d 0.5 2>&1) || fail "(1) dcpitop -n 2: exit $?: $out"
[ "$(echo "$out" | grep -c '^dcpitop [0-9:]*: platform ')" = 2 ] || fail "(1) not two refreshes: $out"
echo "$out" | grep -q $'\033' && fail "(1) escape sequences when not on a terminal"
echo "$out" | grep -qE '^rate: [0-9]+ samples/s \([0-9]+ in [0-9.]+ s\)' || fail "(1) no rate line: $out"
echo "$out" | grep -qE '^lost: [0-9]+ samples \([0-9.]+%\)' || fail "(1) no lost line: $out"
echo "$out" | grep -q '^   samples      %  procedure  image$' || fail "(1) no procedure table: $out"
echo "$out" | grep -q '^   samples      %  image$' || fail "(1) no image table: $out"
echo "$out" | grep -qE '^ +[0-9]+ +[0-9.]+%  hot_mul  work-demo$' || fail "(1) hot_mul not shown: $out"
echo "ok (1) dcpitop -n 2: two refreshes, rate and lost lines, hot_mul shown"

# (2) -comm work-demo, windows (0.5 s) added up until they hold >= 300 of its samples: hot_mul first
: >"$T/rows"
shown=0
for try in $(seq 20); do
    out=$(to 60 "$BIN/dcpitop" -db "$D" -n 2 -d 0.5 -comm work-demo -rows 5 2>&1) || fail "(2) exit $?: $out"
    echo "$out" | grep -q ', only comm work-demo$' || fail "(2) the header does not say the filter: $out"
    echo "$out" | awk '/procedure  image$/ { t = 1; next } /^$/ { t = 0 } t { print $3, $1 }' >>"$T/rows"
    shown=$((shown + $(echo "$out" | awk '$1 == "rate:" { s += $NF } END { print s + 0 }')))
    [ "$shown" -ge 300 ] && break
done
[ "$shown" -ge 300 ] || fail "(2) only $shown samples of work-demo in 20 tries"
first=$(awk '{ c[$1] += $2 } END { for (p in c) print c[p], p }' "$T/rows" | sort -rn | head -1)
[ "$(echo "$first" | awk '{ print $2 }')" = hot_mul ] || fail "(2) first procedure of work-demo: $first of $shown"
echo "ok (2) -comm work-demo: hot_mul first ($first of $shown samples)"

# (3) -pid: only work-demo's images (its program, libc, ld.so, the kernel, the vDSO)
out=$(to 60 "$BIN/dcpitop" -db "$D" -n 1 -d 0.5 -pid "$WP" -i 2>&1) || fail "(3) exit $?: $out"
echo "$out" | grep -q 'procedure' && fail "(3) -i shows procedures: $out"
imgs=$(echo "$out" | awk '/^   samples      %  image$/ { t = 1; next } t && NF >= 3 { print $3 }')
echo "$imgs" | grep -q "work-demo$" || fail "(3) work-demo not among -pid $WP's images: $out"
other=$(echo "$imgs" | grep -vE 'work-demo$|kernel\.kallsyms|libc\.so|ld-linux|vdso|^unknown$' | head -3)
[ -z "$other" ] || fail "(3) -pid $WP shows other images: $other"
echo "ok (3) -pid $WP -i: $(echo $imgs)"

# (4) nothing was flushed by the view
n=$(find "$D" -name '*.prof' | wc -l)
[ "$n" = 0 ] || fail "(4) $n profiles on disk: the view flushed"
echo "ok (4) no profile written while the view ran"

# (5) no daemon
out=$(to 30 "$BIN/dcpitop" -db "$T/none" -n 1 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q '^dcpitop: no dcpid for platform' ||
    fail "(5) no daemon: exit $rc: $out"
out=$("$BIN/dcpitop" -db "$D" -n 0 2>&1) && fail "(5) -n 0 accepted"
exit $((fails > 0))

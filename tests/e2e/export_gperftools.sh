#!/bin/bash
# e2e: dcpiexport -format gperftools. A database is filled by importing a libprofiler run of a
# program with a shared library of ours; the exported CPU profile is read by google-pprof --text,
# which must name the same functions with the same counts and shares as dcpiprof, the library's
# function included (it is placed at a load address of its own in the mapped-objects list).
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting expg
e2e_gperf_prog
"$B/dcpiimport" -db "$T/db" -platform p1 -format gperftools "$T/prog.prof" >/dev/null ||
    { echo "FAIL: dcpiimport"; exit 1; }

"$B/dcpiexport" -db "$T/db" -format gperftools -o "$T/out.prof" prog libspin.so ||
    fail "dcpiexport failed"
google-pprof --text "$T/prog" "$T/out.prof" >"$T/pprof.txt" 2>/dev/null || fail "google-pprof failed"
"$B/dcpiprof" -db "$T/db" -csl prog libspin.so >"$T/dcpi.csv" || fail "dcpiprof failed"
total=$(awk '/^Total:/ {print $2}' "$T/pprof.txt")
mine=$(awk -F, 'NR > 1 {t += $1} END {print t + 0}' "$T/dcpi.csv")
echo "total: pprof $total dcpi $mine"
[ "$total" = "$mine" ] && [ "${total:-0}" -gt 30 ] || fail "total: pprof $total, dcpi $mine"
for f in hot warm lib_spin; do
    p=$(awk -v f=$f '$6 == f {print $1, $2}' "$T/pprof.txt")
    # the share from dcpiprof's count, rounded once as pprof does (dcpiprof's own column is
    # already rounded to two decimals, and rounding that again can differ by 0.1)
    d=$(awk -F, -v f=$f -v t="$mine" '$4 == f {printf "%d %.1f%%\n", $1, 100 * $1 / t}' "$T/dcpi.csv")
    echo "$f: pprof ${p:-0} dcpi ${d:-0}"
    [ -n "$p" ] && [ "$p" = "$d" ] || fail "$f: pprof says ${p:-nothing}, dcpiprof ${d:-nothing}"
done
# the top function is the same
top_p=$(awk 'NR == 2 {print $6}' "$T/pprof.txt")
top_d=$(awk -F, 'NR == 2 {print $4}' "$T/dcpi.csv")
[ "$top_p" = "$top_d" ] || fail "top function: pprof $top_p, dcpiprof $top_d"
# a header of 64-bit slots 0 3 0 period 0: period 1000 us for the 1000 Hz run
[ "$(od -An -tu8 -N40 "$T/out.prof" | tr -s ' ' | sed 's/^ //;s/ $//' | tr '\n' ' ')" = \
    "0 3 0 1000 0 " ] || fail "header slots: $(od -An -tu8 -N40 "$T/out.prof")"
# an unknown event is an error, one line, exit 1
rc=0
"$B/dcpiexport" -db "$T/db" -format gperftools -e nosuch -o "$T/x.prof" 2>"$T/err" || rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && [ ! -e "$T/x.prof" ] ||
    fail "unknown event: exit $rc, $(cat "$T/err")"
[ $fails -eq 0 ] && echo "PASS" || exit 1

#!/bin/bash
# e2e: dcpiimport -format gperftools. A program (with a shared library of ours) runs under
# gperftools' libprofiler; the profile is imported into a fresh database and dcpiprof's counts
# per function must equal google-pprof --text's flat counts on the same file. Malformed files
# give one line, exit 1 and no epoch. The interop profiles of ../shared: import_gperftools_interop.sh.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting impg
e2e_gperf_prog

"$B/dcpiimport" -db "$T/db" -platform p1 -format gperftools "$T/prog.prof" >"$T/imp.out" ||
    fail "dcpiimport failed"
"$B/dcpiprof" -db "$T/db" -csl >"$T/dcpi.csv" || fail "dcpiprof failed"
google-pprof --text "$T/prog" "$T/prog.prof" >"$T/pprof.txt" 2>/dev/null || fail "google-pprof failed"
total=$(awk '/^Total:/ {print $2}' "$T/pprof.txt")
mine=$("$B/dcpiprof" -db "$T/db" | awk '$1 == "cpu-clock" && NF == 4 {print $2}')
[ "$total" = "$mine" ] && [ "${total:-0}" -gt 30 ] || fail "total: pprof $total, dcpi $mine"
for f in hot warm lib_spin; do
    p=$(awk -v f=$f '$6 == f {print $1}' "$T/pprof.txt")
    d=$(awk -F, -v f=$f '$4 == f {print $1}' "$T/dcpi.csv")
    echo "$f: pprof ${p:-0} dcpi ${d:-0}"
    [ -n "$p" ] && [ "$p" = "$d" ] || fail "$f: pprof says ${p:-nothing}, dcpiprof ${d:-nothing}"
done
grep -q "libspin.so" "$T/dcpi.csv" || fail "lib_spin not attributed to libspin.so"

# ---- malformed files: one line, exit 1, no epoch left behind ----
epochs() { ls "$T/db" | grep -c '^[0-9]' || true; }
before=$(epochs)
check_bad() { # NAME FILE EXPECTED-REASON
    local rc=0
    "$B/dcpiimport" -db "$T/db" -platform p1 -format gperftools "$2" >/dev/null 2>"$T/err" || rc=$?
    [ $rc -eq 1 ] || fail "$1: exit $rc, want 1"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$1: not one line: $(cat "$T/err")"
    grep -q "^dcpiimport: $2: .*$3" "$T/err" || fail "$1: message: $(cat "$T/err")"
    echo "$1: $(cat "$T/err")"
    [ "$(epochs)" = "$before" ] || fail "$1: an epoch was created"
    ls -a "$T/db" | grep -q dcpiimport && fail "$1: temporary directory left behind"
    return 0
}
head -c 200 "$T/prog.prof" >"$T/trunc.prof"
check_bad truncated "$T/trunc.prof" "truncated record"
cp "$T/prog.prof" "$T/ver.prof"
printf '\x01' | dd of="$T/ver.prof" bs=1 seek=16 conv=notrunc 2>/dev/null
check_bad version "$T/ver.prof" "format version 1"
printf 'hello world, not a profile' >"$T/junk.prof"
check_bad magic "$T/junk.prof" "not a CPU profile"
cp "$T/prog.prof" "$T/slot.prof"
printf '\x02' | dd of="$T/slot.prof" bs=1 seek=8 conv=notrunc 2>/dev/null
check_bad "slot size" "$T/slot.prof" "not a CPU profile"

[ $fails -eq 0 ] && echo "PASS" || exit 1

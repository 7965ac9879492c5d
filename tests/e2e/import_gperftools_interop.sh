#!/bin/bash
# e2e: dcpiimport -format gperftools on the real profiles of tests/data/interop/gperftools (a C++
# and two Go programs, profiled by gperftools elsewhere): each imported epoch's dcpiprof total
# equals the total of pprof's text dump beside it (.string). Split from import_gperftools.sh,
# which passed without this part when the files were absent.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
S=${DCPI_SRC:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting impgi
I=$S/tests/data/interop/gperftools
for f in cppbench.cpu gobench.cpu go.crc32.cpu; do
    [ -r "$I/$f" ] && [ -r "$I/$f.string" ] ||
        fail "$I/$f or $f.string is not readable (part of the repository)"
done
for f in cppbench.cpu gobench.cpu go.crc32.cpu; do
    want=$(awk '/^Samples:/ {s = 1; next} /^Locations/ {s = 0} s && $2 ~ /:$/ {t += $1}
        END {print t + 0}' "$I/$f.string")
    "$B/dcpiimport" -db "$T/db$f" -platform p1 -format gperftools "$I/$f" >/dev/null 2>&1 ||
        fail "$f: import failed"
    got=$("$B/dcpiprof" -db "$T/db$f" 2>/dev/null | awk '$1 == "cpu-clock" && NF == 4 {print $2}')
    echo "$f: pprof total $want, dcpi $got"
    [ "$want" -gt 0 ] && [ "$want" = "$got" ] || fail "$f: total $got, pprof $want"
done
[ $fails -eq 0 ] && echo "PASS" || exit 1

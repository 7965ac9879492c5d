#!/bin/sh
# tests/slowest.sh - the ten slowest tests of the last ctest runs in the given build directories
# (read from each one's Testing/Temporary/LastTest.log), printed at the end of make test.
#   tests/slowest.sh BUILD_DIR...
for b in "$@"; do
    log=$b/Testing/Temporary/LastTest.log
    [ -f "$log" ] || continue
    awk -v pass="$(basename "$b")" '
        / Test: / { name = $3 }
        /^Test time = / { if (name != "") printf "%8.2f s  %-32s %s\n", $4, name, pass; name = "" }
    ' "$log"
done | sort -rn | head -10 | awk 'NR == 1 { print "slowest tests:" } { print }'

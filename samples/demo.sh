#!/bin/sh
# make demo: profile the bundled workload (samples/work-demo.c: hot_mul ~60%, hot_add ~30%,
# hot_xor ~10% of its work) with dcpid and the value profiler vp-classic, then print dcpiprof's
# breakdown by procedure, and the annotated listing of the hottest procedure's
# instructions that have value samples, with their value hotlists (dcpilist -vprof).
# Usage: demo.sh BUILD_DIR
set -eu
B=$(cd "${1:-build}" && pwd)
DB=$(mktemp -d /tmp/dcpi-demo.XXXXXX)
echo "== dcpid -db $DB -vtrace vp-classic -- work-demo 3000   (3 s of CPU-bound work, PC samples at 1 kHz, value samples)"
if ! "$B/dcpid" -db "$DB" -vtrace vp-classic -- "$B/samples/work-demo" 3000 2>"$DB.err"; then
    cat "$DB.err" >&2
    echo "demo: dcpid failed (see the message above)" >&2
    exit 1
fi
grep -v '^dcpid:   ' "$DB.err" | grep -v 'could not afford' # the per-instruction shortfall: below
rm -f "$DB.err"
echo
echo "== dcpiprof      (by procedure; dcpiprof -i: by image)"
"$B/dcpiprof" -db "$DB" -keep 95
hot=$("$B/dcpiprof" -db "$DB" -keep 99 | awk '$NF == "work-demo" && $(NF-1) ~ /^hot_/ {print $(NF-1); exit}')
echo
echo "== dcpilist -asm -vprof -vtrace vp-classic ${hot:-hot_mul} work-demo   (its instructions with value samples)"
"$B/dcpilist" -db "$DB" -asm -vprof -vtrace vp-classic "${hot:-hot_mul}" "$B/samples/work-demo" |
    awk 'NR <= 2 || /\+-[0-9.]+/ || /^total/ || /^vp-classic: backend/ || /^\+-B/'
echo
echo "The database is in $DB (dcpicat $DB/*/*/work-demo_*/cpu-clock.prof shows the raw profile)."